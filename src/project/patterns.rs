//! Where project files lie in a repository (`ROSTER_PROJECT_FILES`):
//! comma-separated glob patterns such as
//! `project.yaml,services/*/project.yaml,**/project.yaml`.
//!
//! The language is deliberately small, so that every source (the GitHub
//! listing, a push's paths, the `dir:` folder walk, `roster check`) agrees
//! on what matches:
//! - `*` matches any text within one folder name (never `/`), dot-files
//!   included;
//! - `**` is only a whole path segment and spans zero or more folders;
//! - `?`, `[`, `{` and `\` are refused (they mean different things in
//!   different glob dialects);
//! - matching is case-sensitive, like Git paths; a path matched by several
//!   patterns counts once.

use std::fmt;

/// Most patterns one setting may hold: each costs every source some work.
pub const MAX_PATTERNS: usize = 10;

/// Most matching files one repository may have; more makes it `invalid`.
pub const MAX_FILES_PER_REPO: usize = 500;

/// The message of a repository with more than [`MAX_FILES_PER_REPO`]
/// matching files (after `file: `).
pub fn too_many_files() -> String {
    format!("more than {MAX_FILES_PER_REPO} project files")
}

/// The default: one file at the repository's root.
pub const DEFAULT_PATTERN: &str = "project.yaml";

/// The validated patterns of project files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFiles {
    patterns: Vec<Pattern>,
}

/// One glob pattern, split into path segments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    text: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// A folder or file name without `*`.
    Literal(String),
    /// A name with `*`: the literal pieces between the stars, in order.
    Star(Vec<String>),
    /// `**`: zero or more folders.
    AnyDepth,
}

impl Default for ProjectFiles {
    fn default() -> Self {
        ProjectFiles::one(DEFAULT_PATTERN).unwrap_or(ProjectFiles {
            patterns: Vec::new(),
        })
    }
}

impl ProjectFiles {
    /// Parses a comma-separated list of patterns (spaces around each are
    /// ignored). The error says what is wrong, without the setting's name.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut patterns: Vec<Pattern> = Vec::new();
        for text in raw.split(',').map(str::trim) {
            let pattern = Pattern::parse(text)?;
            if !patterns.iter().any(|p| p.text == pattern.text) {
                patterns.push(pattern);
            }
        }
        if patterns.len() > MAX_PATTERNS {
            return Err(format!(
                "at most {MAX_PATTERNS} patterns, not {}",
                patterns.len()
            ));
        }
        Ok(ProjectFiles { patterns })
    }

    /// Exactly the one file at `path`, taken as written (no `*` meaning):
    /// for callers that hold a path already checked, or a fixed one.
    pub fn path(path: &str) -> Self {
        let segments = path
            .split('/')
            .map(|part| Segment::Literal(part.to_owned()))
            .collect();
        ProjectFiles {
            patterns: vec![Pattern {
                text: path.to_owned(),
                segments,
            }],
        }
    }

    /// Parses exactly one pattern (a comma is refused, not split on).
    pub fn one(raw: &str) -> Result<Self, String> {
        if raw.contains(',') {
            return Err(format!("{raw:?} holds one pattern, without commas"));
        }
        Self::parse(raw)
    }

    /// Whether `path` (inside a repository, `/`-separated, no leading `/`)
    /// is a project file.
    pub fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        self.patterns.iter().any(|p| p.matches(&parts))
    }

    /// Whether a file under folder `dir` (a `/`-separated path inside the
    /// repository, `""` for its root) could match: lets a walk of a tree
    /// skip folders no pattern reaches.
    pub fn may_hold(&self, dir: &str) -> bool {
        let parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        self.patterns.iter().any(|p| p.may_hold(&parts))
    }

    /// The path when the setting is one pattern without `*`: the file a
    /// source can read directly, without listing a tree.
    pub fn single_path(&self) -> Option<&str> {
        match self.patterns.as_slice() {
            [only] if only.is_literal() => Some(&only.text),
            _ => None,
        }
    }

    /// The patterns as written (normalised: trimmed, duplicates dropped).
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|p| p.text.as_str())
    }

    /// Whether some pattern needs a walk of the whole tree (`**`).
    pub fn needs_tree(&self) -> bool {
        self.patterns
            .iter()
            .any(|p| p.segments.contains(&Segment::AnyDepth))
    }

    /// For each pattern without `**`, where a reader can start looking:
    /// the folders before its first `*` (`""` for the root), and how many
    /// names follow them (`0` for a pattern that is one fixed path, given
    /// whole as the prefix). Patterns with `**` are left out: only a walk
    /// of the whole tree finds their files.
    pub fn fixed_prefixes(&self) -> Vec<(String, usize)> {
        let mut found = Vec::new();
        for pattern in &self.patterns {
            if pattern.segments.contains(&Segment::AnyDepth) {
                continue;
            }
            let literal = pattern
                .segments
                .iter()
                .take_while(|s| matches!(s, Segment::Literal(_)))
                .count();
            let entry = if literal == pattern.segments.len() {
                (pattern.text.clone(), 0)
            } else {
                let prefix: Vec<&str> = pattern.text.split('/').take(literal).collect();
                (prefix.join("/"), pattern.segments.len() - literal)
            };
            if !found.contains(&entry) {
                found.push(entry);
            }
        }
        found
    }

    /// Sorts `paths`, drops duplicates and those no pattern matches.
    pub fn select(&self, paths: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut kept: Vec<String> = paths.into_iter().filter(|p| self.matches(p)).collect();
        kept.sort();
        kept.dedup();
        kept
    }
}

impl fmt::Display for ProjectFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<&str> = self.patterns().collect();
        f.write_str(&texts.join(","))
    }
}

impl Pattern {
    fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty pattern; give a path like project.yaml".into());
        }
        if let Some(bad) = text.chars().find(|c| matches!(c, '?' | '[' | '{' | '\\')) {
            return Err(format!("{text:?}: `{bad}` is not supported; use * or **"));
        }
        if text.starts_with('/') {
            return Err(format!(
                "{text:?} must be a path inside the repository, without a leading /"
            ));
        }
        let mut segments = Vec::new();
        for part in text.split('/') {
            let segment = match part {
                "" => {
                    return Err(format!(
                        "{text:?} has an empty folder name (//, or a / at the end)"
                    ))
                }
                "." | ".." => {
                    return Err(format!(
                        "{text:?} must stay inside the repository (no . or ..)"
                    ))
                }
                "**" => Segment::AnyDepth,
                _ if part.contains("**") => {
                    return Err(format!(
                        "{text:?}: ** must be a whole folder name, as in **/project.yaml"
                    ))
                }
                _ if part.contains('*') => {
                    Segment::Star(part.split('*').map(str::to_owned).collect())
                }
                _ => Segment::Literal(part.to_owned()),
            };
            // `**/**` means the same as `**`.
            if segment == Segment::AnyDepth && segments.last() == Some(&Segment::AnyDepth) {
                continue;
            }
            segments.push(segment);
        }
        if segments.last() == Some(&Segment::AnyDepth) {
            return Err(format!(
                "{text:?} must end with a file name, as in **/project.yaml"
            ));
        }
        Ok(Pattern {
            text: text.to_owned(),
            segments,
        })
    }

    fn is_literal(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, Segment::Literal(_)))
    }

    /// Whether the whole of `parts` matches. `reach[j]`: the first `i`
    /// segments can consume the first `j` parts (a table, so that several
    /// `**` never cost more than segments × parts steps).
    fn matches(&self, parts: &[&str]) -> bool {
        self.reach(parts).last().copied().unwrap_or(false)
    }

    /// Whether some longer path starting with the folders `parts` may match.
    fn may_hold(&self, parts: &[&str]) -> bool {
        let mut reach = vec![false; parts.len() + 1];
        reach[0] = true;
        for segment in &self.segments {
            // A file must still come after the folders.
            if reach[parts.len()] {
                return true;
            }
            reach = step(segment, parts, &reach);
        }
        false
    }

    fn reach(&self, parts: &[&str]) -> Vec<bool> {
        let mut reach = vec![false; parts.len() + 1];
        reach[0] = true;
        for segment in &self.segments {
            reach = step(segment, parts, &reach);
        }
        reach
    }
}

/// One segment further: which prefixes of `parts` are consumed after it.
fn step(segment: &Segment, parts: &[&str], reach: &[bool]) -> Vec<bool> {
    let mut next = vec![false; reach.len()];
    for j in 0..reach.len() {
        match segment {
            Segment::AnyDepth => next[j] = reach[j] || (j > 0 && next[j - 1]),
            _ => next[j] = j > 0 && reach[j - 1] && segment.matches(parts[j - 1]),
        }
    }
    next
}

impl Segment {
    fn matches(&self, name: &str) -> bool {
        match self {
            Segment::Literal(text) => text == name,
            Segment::Star(pieces) => star_matches(pieces, name),
            Segment::AnyDepth => true,
        }
    }
}

/// `pieces` are the texts between the stars: the first must start the name,
/// the last end it, the others appear in order between.
fn star_matches(pieces: &[String], name: &str) -> bool {
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        return true;
    };
    if name.len() < first.len() + last.len() || !name.starts_with(first.as_str()) {
        return false;
    }
    if !name.ends_with(last.as_str()) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_prefixes_should_name_the_folders_before_the_first_star() {
        let files = ProjectFiles::parse(
            "project.yaml,services/*/project.yaml,a/b/*/*/x.yaml,*/p.yaml,**/q.yaml",
        )
        .expect("patterns");
        assert_eq!(
            files.fixed_prefixes(),
            vec![
                ("project.yaml".to_owned(), 0),
                ("services".to_owned(), 2),
                ("a/b".to_owned(), 3),
                (String::new(), 2),
            ]
        );
    }

    fn files(raw: &str) -> ProjectFiles {
        ProjectFiles::parse(raw).unwrap()
    }

    #[test]
    fn a_plain_path_should_match_only_itself() {
        let p = files("project.yaml");
        assert!(p.matches("project.yaml"));
        assert!(!p.matches("a/project.yaml"));
        assert!(!p.matches("Project.yaml"), "case-sensitive");
        assert_eq!(p.single_path(), Some("project.yaml"));
        assert!(!p.needs_tree());
    }

    #[test]
    fn star_should_stay_within_one_folder_and_match_dot_files() {
        let p = files("services/*/project.yaml");
        assert!(p.matches("services/api/project.yaml"));
        assert!(p.matches("services/.hidden/project.yaml"));
        assert!(!p.matches("services/a/b/project.yaml"));
        assert!(!p.matches("services/project.yaml"));
        assert_eq!(p.single_path(), None);
        let q = files("*.project.yaml");
        assert!(q.matches(".project.yaml"));
        assert!(q.matches("api.project.yaml"));
        assert!(!q.matches("x/api.project.yaml"));
    }

    #[test]
    fn stars_inside_a_name_should_match_in_order() {
        let p = files("svc-*-x*.yaml");
        assert!(p.matches("svc-a-x.yaml"));
        assert!(p.matches("svc--xyz.yaml"));
        assert!(!p.matches("svc-a.yaml"));
        assert!(!p.matches("svc-x.yaml"), "the pieces may not overlap");
    }

    #[test]
    fn double_star_should_span_zero_or_more_folders() {
        let p = files("**/project.yaml");
        assert!(p.matches("project.yaml"));
        assert!(p.matches("a/project.yaml"));
        assert!(p.matches("a/b/c/project.yaml"));
        assert!(!p.matches("a/project.yml"));
        assert!(p.needs_tree());
        let q = files("a/**/b/**/c.yaml");
        assert!(q.matches("a/b/c.yaml"));
        assert!(q.matches("a/x/b/y/z/c.yaml"));
        assert!(!q.matches("a/c.yaml"));
    }

    #[test]
    fn a_path_matched_by_several_patterns_should_count_once() {
        let p = files("project.yaml, **/project.yaml ,project.yaml");
        assert_eq!(p.patterns().count(), 2);
        let paths = vec![
            "b/project.yaml".to_string(),
            "project.yaml".into(),
            "project.yaml".into(),
        ];
        assert_eq!(p.select(paths), vec!["b/project.yaml", "project.yaml"]);
    }

    #[test]
    fn may_hold_should_prune_folders_no_pattern_reaches() {
        let p = files("services/*/project.yaml,.github/project.yaml");
        assert!(p.may_hold(""));
        assert!(p.may_hold("services"));
        assert!(p.may_hold("services/api"));
        assert!(!p.may_hold("services/api/deep"));
        assert!(!p.may_hold("docs"));
        assert!(p.may_hold(".github"));
        let q = files("**/project.yaml");
        assert!(q.may_hold("node_modules/x/y"));
    }

    #[test]
    fn unsupported_or_escaping_patterns_should_be_refused_with_a_reason() {
        for (bad, says) in [
            ("proj?ct.yaml", "`?`"),
            ("[ab].yaml", "`[`"),
            ("{a,b}.yaml", "`{`"),
            ("a\\b.yaml", "`\\`"),
            ("/project.yaml", "leading /"),
            ("../project.yaml", "inside the repository"),
            ("a//project.yaml", "empty folder name"),
            ("services/", "empty folder name"),
            ("a**/project.yaml", "whole folder name"),
            ("services/**", "end with a file name"),
            ("", "empty pattern"),
            ("project.yaml,", "empty pattern"),
        ] {
            let error = ProjectFiles::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad:?}: {error}");
        }
    }

    #[test]
    fn more_than_ten_patterns_should_be_refused() {
        let eleven: Vec<String> = (0..11).map(|i| format!("d{i}/project.yaml")).collect();
        let error = ProjectFiles::parse(&eleven.join(",")).unwrap_err();
        assert!(error.contains("at most 10"), "{error}");
        assert!(ProjectFiles::parse(&eleven[..10].join(",")).is_ok());
    }

    #[test]
    fn one_should_refuse_a_list() {
        assert!(ProjectFiles::one("a.yaml,b.yaml").is_err());
        assert_eq!(
            ProjectFiles::one("a.yaml").unwrap().single_path(),
            Some("a.yaml")
        );
    }

    #[test]
    fn many_double_stars_should_stay_cheap_on_a_deep_path() {
        // The table is segments × parts, so this returns at once; a
        // backtracking matcher would take exponential time here.
        let deep = vec!["a"; 2000].join("/");
        let q = files("**/a/**/a/**/a/**/a/**/b.yaml");
        assert!(!q.matches(&deep));
        assert!(q.matches(&format!("{deep}/b.yaml")));
    }
}
