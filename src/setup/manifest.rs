//! The App manifest posted to GitHub: `app.yml` (the one description of
//! the App's permissions and events) as JSON, with the addresses of this
//! Roster filled in.

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value};
use url::Url;

/// The manifest as the repository keeps it.
pub const APP_YML: &str = include_str!("../../app.yml");

/// `app.yml` as JSON with `url`, `hook_attributes.url` and `redirect_url`
/// pointing at `public` (the address GitHub reaches this Roster at).
pub fn manifest_json(public: &PublicUrl) -> Result<Value, String> {
    let mut manifest = yaml_to_json(APP_YML)?;
    let Some(fields) = manifest.as_object_mut() else {
        return Err("app.yml is not a mapping".into());
    };
    fields.insert("url".into(), Value::String(public.base().to_owned()));
    fields.insert(
        "redirect_url".into(),
        Value::String(public.join("/setup/callback")),
    );
    let hook = fields
        .entry("hook_attributes")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(hook) = hook.as_object_mut() {
        hook.insert("url".into(), Value::String(public.join("/webhooks/github")));
    }
    Ok(manifest)
}

/// The address GitHub reaches Roster at: an http(s) URL without a query,
/// kept without its trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// Checks `raw`; the message says what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let url = Url::parse(raw.trim()).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!("{raw:?} must be an http or https address"));
        }
        if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
            return Err(format!(
                "{raw:?} must be a plain address, without query, fragment or user"
            ));
        }
        Ok(Self(url.as_str().trim_end_matches('/').to_owned()))
    }

    pub fn base(&self) -> &str {
        &self.0
    }

    fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

/// Checks an organisation's login as GitHub allows them: letters, digits
/// and single hyphens, at most 39 characters. Empty means a personal
/// account.
pub fn check_org(org: &str) -> Result<(), String> {
    let ok = org.len() <= 39
        && org
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()));
    if org.is_empty() || ok {
        Ok(())
    } else {
        Err(format!("{org:?} is not a GitHub organisation name"))
    }
}

/// A YAML document of mappings, sequences and scalars as JSON: plain
/// `true`/`false`/`null` and integers keep their type, the rest is text.
pub(super) fn yaml_to_json(text: &str) -> Result<Value, String> {
    let mut parser = Parser::new_from_str(text);
    // Open containers, each with the key waiting for its value (mappings).
    let mut stack: Vec<(Value, Option<String>)> = Vec::new();
    let mut done = None;
    while let Some(next) = parser.next_event() {
        let (event, _) = next.map_err(|e| format!("app.yml: {e}"))?;
        let value = match event {
            Event::MappingStart(..) => {
                stack.push((Value::Object(Map::new()), None));
                continue;
            }
            Event::SequenceStart(..) => {
                stack.push((Value::Array(Vec::new()), None));
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => match stack.pop() {
                Some((value, _)) => value,
                None => return Err("app.yml: unbalanced document".into()),
            },
            Event::Scalar(text, style, ..) => scalar(&text, style),
            Event::Alias(_) => return Err("app.yml: aliases are not supported".into()),
            _ => continue,
        };
        match stack.last_mut() {
            None => done = Some(value),
            Some((Value::Array(items), _)) => items.push(value),
            Some((Value::Object(fields), key)) => match key.take() {
                None => {
                    *key = Some(
                        value
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| value.to_string()),
                    )
                }
                Some(name) => {
                    fields.insert(name, value);
                }
            },
            Some(_) => return Err("app.yml: unexpected value".into()),
        }
    }
    done.ok_or_else(|| "app.yml is empty".into())
}

fn scalar(text: &str, style: ScalarStyle) -> Value {
    if style != ScalarStyle::Plain {
        return Value::String(text.to_owned());
    }
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "~" => Value::Null,
        _ => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_should_be_app_yml_with_this_rosters_addresses() {
        let public = PublicUrl::parse("https://roster.acme.test/").expect("valid");
        let manifest = manifest_json(&public).expect("manifest");
        assert_eq!(manifest["url"], "https://roster.acme.test");
        assert_eq!(
            manifest["hook_attributes"]["url"],
            "https://roster.acme.test/webhooks/github"
        );
        assert_eq!(manifest["hook_attributes"]["active"], true);
        assert_eq!(
            manifest["redirect_url"],
            "https://roster.acme.test/setup/callback"
        );
        assert_eq!(manifest["public"], false);
        assert_eq!(manifest["default_permissions"]["contents"], "read");
        assert_eq!(manifest["default_permissions"]["checks"], "write");
        let events = manifest["default_events"].as_array().expect("events");
        assert!(events.contains(&Value::from("push")), "{events:?}");
    }

    #[test]
    fn app_yml_should_read_as_a_full_yaml_parser_reads_it() {
        let full: Value = serde_yaml_ng::from_str(APP_YML).expect("app.yml is YAML");
        assert_eq!(yaml_to_json(APP_YML).expect("read"), full);
    }

    #[test]
    fn a_public_address_should_be_a_plain_http_url() {
        assert!(PublicUrl::parse("http://127.0.0.1:8080").is_ok());
        assert_eq!(
            PublicUrl::parse("https://r.example/base/").map(|u| u.base().to_owned()),
            Ok("https://r.example/base".to_owned())
        );
        for bad in [
            "",
            "roster.example.com",
            "ftp://x",
            "https://x/?a=b",
            "https://u@x/",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_organisation_should_be_a_github_login_or_empty() {
        for good in ["", "acme", "acme-corp", "a1"] {
            assert!(check_org(good).is_ok(), "{good}");
        }
        for bad in ["-acme", "acme-", "a--b", "ac me", "../x", &"a".repeat(40)] {
            assert!(check_org(bad).is_err(), "{bad}");
        }
    }
}
