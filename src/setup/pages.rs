//! The setup pages and the headers they are served with: never cached,
//! never sent as a referrer (the first address carries the token), and
//! allowed to post one form to GitHub.

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The form asking for the organisation and the public address.
#[derive(Template)]
#[template(path = "setup.html")]
pub struct SetupPage {
    pub token: String,
    pub org: String,
    pub public_url: String,
    /// The address is `ROSTER_PUBLIC_URL`'s, shown but not editable.
    pub fixed: bool,
    pub problem: Option<String>,
}

impl SetupPage {
    /// `name: level` of each permission `app.yml` asks for, by name:
    /// the page says what GitHub will ask the person to grant, read from
    /// the one file that asks for it, so the two cannot drift.
    pub fn permissions(&self) -> Vec<String> {
        super::asked::asked()
            .0
            .into_iter()
            .map(|(name, level)| format!("{name}: {level}"))
            .collect()
    }

    /// The events `app.yml` subscribes to, in its order.
    pub fn events(&self) -> Vec<String> {
        super::asked::asked().1
    }
}

/// The form that takes the manifest to GitHub's new-App page.
#[derive(Template)]
#[template(path = "setup_github.html")]
pub struct GithubPage {
    pub action: String,
    pub manifest: String,
    pub owner: String,
    pub public_url: String,
    /// The setup form again, under the token that replaced the one used.
    pub again: String,
}

/// Why a step was refused, and what to do.
#[derive(Template)]
#[template(path = "setup_problem.html")]
pub struct ProblemPage {
    pub status: u16,
    pub reason: &'static str,
    pub message: String,
    pub hint: &'static str,
}

/// `template` as an HTML answer with `status` and the setup headers;
/// `form_target` is the one other origin a form may post to.
pub fn page(status: StatusCode, template: &impl Template, form_target: &str) -> Response {
    let body = match template.render() {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "cannot render a setup page");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let policy = format!(
        "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self' {form_target}"
    );
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    if let Ok(policy) = HeaderValue::from_str(&policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A [`ProblemPage`] answer.
pub fn problem(status: StatusCode, message: impl Into<String>, hint: &'static str) -> Response {
    let template = ProblemPage {
        status: status.as_u16(),
        reason: status.canonical_reason().unwrap_or(""),
        message: message.into(),
        hint,
    };
    page(status, &template, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_page_should_list_every_permission_and_event_app_yml_asks_for() {
        let manifest: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(crate::setup::manifest::APP_YML).expect("app.yml parses");
        let page = SetupPage {
            token: "t".into(),
            org: String::new(),
            public_url: String::new(),
            fixed: false,
            problem: None,
        }
        .render()
        .expect("renders");
        let permissions = manifest["default_permissions"]
            .as_mapping()
            .expect("permissions");
        assert!(permissions.len() >= 5, "{permissions:?}");
        for (name, level) in permissions {
            let shown = format!(
                "<code>{}: {}</code>",
                name.as_str().unwrap_or_default(),
                level.as_str().unwrap_or_default()
            );
            assert!(page.contains(&shown), "{shown} missing from:\n{page}");
        }
        let listed = page.matches("<li><code>").count();
        assert_eq!(listed, permissions.len(), "{page}");
        for event in manifest["default_events"].as_sequence().expect("events") {
            let shown = format!("<code>{}</code>", event.as_str().unwrap_or_default());
            assert!(page.contains(&shown), "{shown} missing from:\n{page}");
        }
    }
}
