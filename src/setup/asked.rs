//! What Roster asks of GitHub (`app.yml`'s permissions and events) against
//! what an installation granted: an App registered before `app.yml` asked
//! for more keeps its old registration, so the dashboard names what is
//! missing and where to add it (docs/github-app.md).

use std::collections::BTreeMap;

use super::manifest::{yaml_to_json, APP_YML};
use crate::github::grants::Grant;
use crate::source::InstallationId;

/// What an installation lacks of what Roster asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lacking {
    pub installation_id: InstallationId,
    pub account: String,
    /// `name: level` of each permission missing or granted below the level asked.
    pub permissions: Vec<String>,
    pub events: Vec<String>,
    /// The App's permission settings on GitHub, when its slug is known.
    pub settings_url: Option<String>,
}

/// `app.yml`'s `default_permissions` and `default_events`.
pub fn asked() -> (BTreeMap<String, String>, Vec<String>) {
    let Ok(manifest) = yaml_to_json(APP_YML) else {
        return Default::default();
    };
    let permissions = manifest["default_permissions"]
        .as_object()
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let events = manifest["default_events"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|v| Some(v.as_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    (permissions, events)
}

fn rank(level: &str) -> u8 {
    match level {
        "read" => 1,
        "write" => 2,
        "admin" => 3,
        _ => 0,
    }
}

/// What `grant` lacks of what Roster asks for; `None` when nothing. `web`
/// is GitHub's web address (`https://github.com`).
pub fn lacking(grant: &Grant, web: &str) -> Option<Lacking> {
    let (permissions, events) = asked();
    let permissions: Vec<String> = permissions
        .iter()
        .filter(|(name, level)| {
            let had = grant.permissions.get(*name).map_or(0, |l| rank(l));
            had < rank(level)
        })
        .map(|(name, level)| format!("{name}: {level}"))
        .collect();
    let events: Vec<String> = events
        .into_iter()
        .filter(|e| !grant.events.contains(e))
        .collect();
    if permissions.is_empty() && events.is_empty() {
        return None;
    }
    // The App is private: only the account that registered it installs it.
    let settings_url = grant
        .app_slug
        .as_ref()
        .map(|slug| match grant.organization {
            true => format!(
                "{web}/organizations/{}/settings/apps/{slug}/permissions",
                grant.account
            ),
            false => format!("{web}/settings/apps/{slug}/permissions"),
        });
    Some(Lacking {
        installation_id: grant.installation_id,
        account: grant.account.clone(),
        permissions,
        events,
        settings_url,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(permissions: &[(&str, &str)], events: &[&str]) -> Grant {
        Grant {
            installation_id: InstallationId(7),
            account: "acme".into(),
            organization: true,
            app_slug: Some("roster".into()),
            permissions: permissions
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            events: events.iter().map(|e| (*e).to_owned()).collect(),
        }
    }

    #[test]
    fn what_app_yml_asks_should_be_read_from_it() {
        let (permissions, events) = asked();
        assert_eq!(permissions.get("members").map(String::as_str), Some("read"));
        assert_eq!(permissions.get("checks").map(String::as_str), Some("write"));
        assert!(events.iter().any(|e| e == "team"), "{events:?}");
    }

    #[test]
    fn a_grant_without_members_and_the_team_events_should_lack_them() {
        let (permissions, events) = asked();
        let mut all: Vec<(&str, &str)> = permissions
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let every: Vec<&str> = events.iter().map(String::as_str).collect();
        assert_eq!(lacking(&grant(&all, &every), "https://github.com"), None);
        all.retain(|(k, _)| *k != "members");
        all.retain(|(k, _)| *k != "checks");
        all.push(("checks", "read"));
        let older: Vec<&str> = every
            .iter()
            .copied()
            .filter(|e| !["team", "membership", "organization"].contains(e))
            .collect();
        let lack = lacking(&grant(&all, &older), "https://github.com").expect("lacking");
        assert_eq!(lack.permissions, vec!["checks: write", "members: read"]);
        assert_eq!(lack.events, vec!["team", "membership", "organization"]);
        assert_eq!(
            lack.settings_url.as_deref(),
            Some("https://github.com/organizations/acme/settings/apps/roster/permissions")
        );
    }
}
