//! GitHub's side of the App manifest flow: the web pages that take a
//! manifest (`/settings/apps/new`, `/organizations/{org}/settings/apps/new`),
//! confirm it and send the browser back with a code, and the API route
//! that turns the code into the App (`POST /app-manifests/{code}/conversions`,
//! no authentication, 201 with the App and its secrets; an unknown or used
//! code is a 404). Codes work once, as on GitHub.

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::rest::Answer;
use super::{respond, Shared, APP_ID, PRIVATE_KEY};

/// The route name the conversion is counted under.
pub const CONVERSION: &str = "POST /app-manifests/{code}/conversions";

/// A manifest posted to the new-App page.
#[derive(Debug, Clone)]
pub struct Posted {
    /// The organisation in the page's path; `None` for a personal account.
    pub org: Option<String>,
    pub state: String,
    pub manifest: Value,
}

/// How the conversion fails instead of answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConversionFailure {
    /// This status with GitHub's error body.
    Status(u16),
    /// The connection drops mid-answer.
    Close,
}

/// The manifest flow's state.
#[derive(Debug, Default)]
pub struct Manifests {
    pub posted: Vec<Posted>,
    /// Codes not exchanged yet: the manifest and the owner's login.
    codes: HashMap<String, (Value, String)>,
    next_code: u64,
    pub failure: Option<ConversionFailure>,
    pub conversions: u64,
}

impl Manifests {
    /// A code for an App made from `manifest`, owned by `owner`.
    pub fn register(&mut self, manifest: Value, owner: &str) -> String {
        self.next_code += 1;
        let code = format!("c0de{:08x}", self.next_code);
        self.codes
            .insert(code.clone(), (manifest, owner.to_owned()));
        code
    }
}

/// The App GitHub answers the conversion with (shape of GitHub's docs).
fn app_json(base: &str, code: &str, manifest: &Value, owner: &str) -> Value {
    let name = manifest["name"].as_str().unwrap_or("Roster");
    let slug = name.to_ascii_lowercase().replace(' ', "-");
    json!({
        "id": APP_ID,
        "slug": slug,
        "node_id": "MDM6QXBwNDI0Mg==",
        "owner": {
            "login": owner,
            "id": 9919,
            "node_id": "MDEyOk9yZ2FuaXphdGlvbjk5MTk=",
            "type": "Organization",
            "site_admin": false
        },
        "name": name,
        "description": manifest["description"].as_str().unwrap_or(""),
        "external_url": manifest["url"],
        "html_url": format!("{base}/apps/{slug}"),
        "created_at": "2026-11-25T12:00:00Z",
        "updated_at": "2026-11-25T12:00:00Z",
        "permissions": manifest["default_permissions"],
        "events": manifest["default_events"],
        "client_id": "Iv1.8a61f9b3a7aba766",
        "client_secret": format!("client-secret-{code}"),
        "webhook_secret": format!("webhook-secret-{code}"),
        "pem": PRIVATE_KEY
    })
}

/// Answers the manifest flow's routes; `None` for any other request.
pub(super) fn answer(
    shared: &Shared,
    method: &Method,
    uri: &axum::http::Uri,
    body: &[u8],
) -> Option<Response> {
    let path = uri.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let query: HashMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["settings", "apps", "new"]) => Some(new_app_page(shared, None, &query, &form)),
        ("POST", ["organizations", org, "settings", "apps", "new"]) => {
            Some(new_app_page(shared, Some(org), &query, &form))
        }
        ("POST", ["fake", "apps", "create"]) => Some(create(shared, &form)),
        ("GET", ["apps", slug, "installations", "new"]) => Some(html(
            StatusCode::OK,
            &format!("<title>Install {slug}</title><h1 id=\"install\">Install {slug}</h1>"),
        )),
        ("POST", ["app-manifests", code, "conversions"]) => Some(convert(shared, code)),
        _ => None,
    }
}

fn html(status: StatusCode, body: &str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "text/html; charset=utf-8")
        .body(axum::body::Body::from(format!("<!doctype html>{body}")))
        .unwrap_or_else(|_| Response::new(axum::body::Body::empty()))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The page GitHub shows for a posted manifest: what will be created,
/// and a button that creates it.
fn new_app_page(
    shared: &Shared,
    org: Option<&str>,
    query: &HashMap<String, String>,
    form: &HashMap<String, String>,
) -> Response {
    let state = query.get("state").cloned().unwrap_or_default();
    let Some(manifest) = form
        .get("manifest")
        .and_then(|m| serde_json::from_str::<Value>(m).ok())
    else {
        return html(
            StatusCode::UNPROCESSABLE_ENTITY,
            "<p>Invalid GitHub App configuration</p>",
        );
    };
    shared.manifests().posted.push(Posted {
        org: org.map(str::to_owned),
        state: state.clone(),
        manifest: manifest.clone(),
    });
    let owner = org.unwrap_or("octocat");
    let name = manifest["name"].as_str().unwrap_or("");
    html(
        StatusCode::OK,
        &format!(
            "<title>Create GitHub App</title><h1>Create GitHub App for {owner}</h1>\
             <p id=\"name\">{}</p>\
             <form method=\"post\" action=\"/fake/apps/create\">\
             <input type=\"hidden\" name=\"manifest\" value=\"{}\">\
             <input type=\"hidden\" name=\"owner\" value=\"{}\">\
             <input type=\"hidden\" name=\"state\" value=\"{}\">\
             <button id=\"create\" type=\"submit\">Create GitHub App for {owner}</button></form>",
            escape(name),
            escape(&manifest.to_string()),
            escape(owner),
            escape(&state),
        ),
    )
}

/// "Create GitHub App": a code, and the browser sent to `redirect_url`.
fn create(shared: &Shared, form: &HashMap<String, String>) -> Response {
    let manifest: Value = form
        .get("manifest")
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    let owner = form.get("owner").cloned().unwrap_or_default();
    let state = form.get("state").cloned().unwrap_or_default();
    let Some(redirect) = manifest["redirect_url"].as_str().map(str::to_owned) else {
        return html(
            StatusCode::UNPROCESSABLE_ENTITY,
            "<p>redirect_url missing</p>",
        );
    };
    let code = shared.manifests().register(manifest, &owner);
    let mut target = match url::Url::parse(&redirect) {
        Ok(url) => url,
        Err(_) => return html(StatusCode::UNPROCESSABLE_ENTITY, "<p>bad redirect_url</p>"),
    };
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state);
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", target.as_str())
        .body(axum::body::Body::empty())
        .unwrap_or_else(|_| Response::new(axum::body::Body::empty()))
}

fn convert(shared: &Shared, code: &str) -> Response {
    let mut manifests = shared.manifests();
    manifests.conversions += 1;
    match manifests.failure {
        Some(ConversionFailure::Close) => return super::broken_connection(),
        Some(ConversionFailure::Status(422)) => {
            return respond(
                Answer::json(
                    422,
                    json!({
                        "message": "Validation Failed",
                        "errors": [{"resource": "Integration", "code": "custom", "message": "Name is already in use"}],
                        "documentation_url": "https://docs.github.com/rest/apps/apps#create-a-github-app-from-a-manifest"
                    }),
                ),
                &[],
            )
        }
        Some(ConversionFailure::Status(status)) => {
            return respond(Answer::message(status, "Server Error"), &[])
        }
        None => {}
    }
    match manifests.codes.remove(code) {
        Some((manifest, owner)) => respond(
            Answer::json(201, app_json(&shared.base, code, &manifest, &owner)),
            &[],
        ),
        None => respond(Answer::not_found(), &[]),
    }
}
