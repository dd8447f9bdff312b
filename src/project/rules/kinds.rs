//! The rules of each kind of field ([`Rule`]): a field of the table in
//! `fields.rs` is read by the rule its row names, into the JSON value
//! [`Fields`] is built from.

use std::collections::BTreeMap;

use super::*;
use crate::project::fields::Link;

impl<'t> Walk<'t> {
    /// Reads the field `name` by `rule`; `None` when it broke the rule
    /// (the problem is recorded).
    pub(super) fn read(&mut self, rule: Rule, name: &str, id: NodeId, field: &str) -> Option<Json> {
        match rule {
            Rule::Text {
                required: true,
                max_chars,
            } => self.required_text(id, field, max_chars).map(Json::from),
            Rule::Text {
                required: false,
                max_chars,
            } => self.optional_text(id, field, max_chars),
            Rule::Word(words) => self.word(id, field, words),
            Rule::Names { max } => serde_json::to_value(self.names(id, field, name, max)).ok(),
            Rule::Name => self.optional_name(id, field),
            Rule::Dependencies { max } => {
                serde_json::to_value(self.dependencies(id, field, name, max)).ok()
            }
            Rule::Links { max } => serde_json::to_value(self.links(id, field, name, max)).ok(),
            Rule::Labels { max } => serde_json::to_value(self.labels(id, field, name, max)).ok(),
            Rule::Resolved => {
                self.issue(id, field, unknown_field(name, &file_keys()));
                None
            }
        }
    }

    pub(super) fn name(&mut self, id: NodeId, field: &str) -> Option<ProjectName> {
        let text = self.string(id, field)?;
        match ProjectName::parse(text) {
            Ok(name) => Some(name),
            Err(error) => {
                self.issue(id, field, error.to_string());
                None
            }
        }
    }

    fn required_text(&mut self, id: NodeId, field: &str, max: usize) -> Option<String> {
        let text = self.string(id, field)?;
        let chars = text.chars().count();
        if text.trim().is_empty() {
            self.issue(id, field, "must not be empty");
        } else if chars > max {
            self.issue(
                id,
                field,
                format!("must be at most {max} characters, found {chars}"),
            );
        } else {
            return Some(text.to_owned());
        }
        None
    }

    /// Text or nothing (`Json::Null`); `None` when it broke the rule.
    fn optional_text(&mut self, id: NodeId, field: &str, max: usize) -> Option<Json> {
        if matches!(self.value(id), Value::Null) {
            return Some(Json::Null);
        }
        let text = self.string(id, field)?;
        let chars = text.chars().count();
        if chars > max {
            let message = format!("must be at most {max} characters, found {chars}");
            self.issue(id, field, message);
            return None;
        }
        Some(Json::from(text))
    }

    /// One of `words` or nothing (`Json::Null`).
    fn word(&mut self, id: NodeId, field: &str, words: &[&str]) -> Option<Json> {
        if matches!(self.value(id), Value::Null) {
            return Some(Json::Null);
        }
        let text = self.string(id, field)?;
        if words.contains(&text) {
            return Some(Json::from(text));
        }
        let message = format!("must be one of {}, found \"{text}\"", words.join(", "));
        self.issue(id, field, message);
        None
    }

    fn names(&mut self, id: NodeId, field: &str, name: &str, max: usize) -> Vec<String> {
        let Some(items) = self.list(id, field) else {
            return Vec::new();
        };
        if items.len() > max {
            let message = format!("at most {max} {name} are allowed, found {}", items.len());
            self.issue(id, field, message);
        }
        let mut tags = Vec::with_capacity(items.len());
        for (index, &item) in items.iter().enumerate() {
            let item_field = format!("{field}[{index}]");
            let Some(text) = self.string(item, &item_field) else {
                continue;
            };
            match check_name(text) {
                Ok(()) => tags.push(text.to_owned()),
                Err(error) => self.issue(item, item_field, error.to_string()),
            }
        }
        tags
    }

    /// A name-like word or nothing (`Json::Null`).
    fn optional_name(&mut self, id: NodeId, field: &str) -> Option<Json> {
        if matches!(self.value(id), Value::Null) {
            return Some(Json::Null);
        }
        let text = self.string(id, field)?;
        match check_name(text) {
            Ok(()) => Some(Json::from(text)),
            Err(error) => {
                self.issue(id, field, error.to_string());
                None
            }
        }
    }

    /// Project names, each given once and none the project's own: the
    /// rule of `names` and two more.
    fn dependencies(&mut self, id: NodeId, field: &str, name: &str, max: usize) -> Vec<String> {
        let names = self.names(id, field, name, max);
        let Value::List(items) = self.value(id) else {
            return names;
        };
        let mut first: HashMap<&str, usize> = HashMap::new();
        for (index, &item) in items.iter().enumerate() {
            let Value::Text(text) = self.value(item) else {
                continue;
            };
            let item_field = format!("{field}[{index}]");
            if self.own_name == Some(text) {
                let message = format!("a project cannot depend on itself (\"{text}\")");
                self.issue(item, item_field, message);
            } else if let Some(earlier) = first.get(text) {
                let message = format!("\"{text}\" is already listed at {field}[{earlier}]");
                self.issue(item, item_field, message);
            } else {
                first.insert(text, index);
            }
        }
        names
    }

    fn links(&mut self, id: NodeId, field: &str, name: &str, max: usize) -> Vec<Link> {
        let Some(items) = self.list(id, field) else {
            return Vec::new();
        };
        if items.len() > max {
            let message = format!("at most {max} {name} are allowed, found {}", items.len());
            self.issue(id, field, message);
        }
        let mut links = Vec::with_capacity(items.len());
        for (index, &item) in items.iter().enumerate() {
            links.extend(self.link(item, &format!("{field}[{index}]")));
        }
        links
    }

    fn link(&mut self, id: NodeId, prefix: &str) -> Option<Link> {
        let Value::Map(map) = self.value(id) else {
            let found = self.describe(id);
            self.issue(
                id,
                prefix,
                format!("must be a mapping with title and url, found {found}"),
            );
            return None;
        };
        let before = self.issues.found();
        let (mut title, mut url) = (None, None);
        let (mut seen_title, mut seen_url) = (false, false);
        for (key, key_id, value) in self.entries(map, prefix) {
            let field = join(prefix, key);
            match key {
                "title" => {
                    seen_title = true;
                    title = self.title(value, &field);
                }
                "url" => {
                    seen_url = true;
                    url = self.url(value, &field);
                }
                _ => self.issue(key_id, field, unknown_field(key, LINK_FIELDS)),
            }
        }
        for (seen, key) in [(seen_title, "title"), (seen_url, "url")] {
            if !seen {
                self.issue(id, join(prefix, key), "missing required field");
            }
        }
        if self.issues.found() != before {
            return None;
        }
        Some(Link {
            title: title?,
            url: url?,
        })
    }

    fn title(&mut self, id: NodeId, field: &str) -> Option<String> {
        let text = self.string(id, field)?;
        if text.trim().is_empty() {
            self.issue(id, field, "must not be empty");
            return None;
        }
        self.at_most(id, field, text, MAX_LINK_TITLE_CHARS)
            .then(|| text.to_owned())
    }

    /// Whether `text` has at most `max` characters; reports it otherwise.
    fn at_most(&mut self, id: NodeId, field: &str, text: &str, max: usize) -> bool {
        let chars = text.chars().count();
        if chars > max {
            self.issue(
                id,
                field,
                format!("must be at most {max} characters, found {chars}"),
            );
        }
        chars <= max
    }

    fn url(&mut self, id: NodeId, field: &str) -> Option<String> {
        let text = self.string(id, field)?;
        if text.trim().is_empty() {
            self.issue(id, field, "must not be empty");
            return None;
        }
        if !self.at_most(id, field, text, MAX_LINK_URL_CHARS) {
            return None;
        }
        match url::Url::parse(text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => return Some(text.to_owned()),
            Ok(_) => self.issue(
                id,
                field,
                format!("must be an http or https URL, found \"{text}\""),
            ),
            Err(error) => self.issue(
                id,
                field,
                format!("must be an http or https URL, found \"{text}\" ({error})"),
            ),
        }
        None
    }

    fn labels(
        &mut self,
        id: NodeId,
        field: &str,
        name: &str,
        max: usize,
    ) -> BTreeMap<String, String> {
        let map = match self.value(id) {
            Value::Null => return BTreeMap::new(),
            Value::Map(map) => map,
            _ => {
                let found = self.describe(id);
                let message = format!("must be a mapping of strings to strings, found {found}");
                self.issue(id, field, message);
                return BTreeMap::new();
            }
        };
        if map.len() > max {
            let message = format!("at most {max} {name} are allowed, found {}", map.len());
            self.issue(id, field, message);
        }
        let mut labels = BTreeMap::new();
        for (key, key_id, value) in self.entries(map, field) {
            let chars = key.chars().count();
            if chars > MAX_LABEL_KEY_CHARS {
                // Named by the map, not the key: the line stays short.
                let message = format!(
                    "a key must be at most {MAX_LABEL_KEY_CHARS} characters, found {chars}"
                );
                self.issue(key_id, field, message);
                continue;
            }
            let label_field = join(field, key);
            match self.value(value) {
                Value::Text(text) => {
                    if self.at_most(value, &label_field, text, MAX_LABEL_VALUE_CHARS) {
                        labels.insert(key.to_owned(), text.to_owned());
                    }
                }
                Value::Null => self.issue(
                    value,
                    label_field,
                    "must be a string, found nothing (write \"\" for an empty value)",
                ),
                _ => {
                    let found = self.describe(value);
                    self.issue(
                        value,
                        label_field,
                        format!("must be a string, found {found}"),
                    );
                }
            }
        }
        labels
    }
}
