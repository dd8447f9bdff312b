//! Blobs read by path at a commit, many repositories to one GraphQL query:
//! `rK: repository(owner:, name:) { fJ: object(expression: "<sha>:<path>")
//! { ... on Blob } }`. What `**` patterns found in a walked tree is read so.

/// One repository's blobs in the query: owner, name, (alias, expression).
type Asked<'a> = (&'a str, &'a str, Vec<(String, &'a str)>);

/// One blob to read: in `owner/name`, at `<commit>:<path>`.
pub struct BlobAsk<'a> {
    pub owner: &'a str,
    pub name: &'a str,
    pub expression: String,
}

/// The query reading `asks`, one `rK: repository` per repository and one
/// `fK: object(expression:)` per blob; each ask's (repository, blob) alias.
pub fn blob_query(asks: &[BlobAsk<'_>]) -> (String, Vec<(String, String)>) {
    let mut repos: Vec<Asked<'_>> = Vec::new();
    let mut aliases = Vec::new();
    for (k, ask) in asks.iter().enumerate() {
        let at = match repos
            .iter()
            .position(|(o, n, _)| *o == ask.owner && *n == ask.name)
        {
            Some(at) => at,
            None => {
                repos.push((ask.owner, ask.name, Vec::new()));
                repos.len() - 1
            }
        };
        repos[at].2.push((format!("f{k}"), ask.expression.as_str()));
        aliases.push((format!("r{at}"), format!("f{k}")));
    }
    let mut query = String::from("query ReadBlobs {\n");
    for (at, (owner, name, blobs)) in repos.iter().enumerate() {
        query.push_str(&format!(
            "  r{at}: repository(owner: {}, name: {}) {{\n",
            quoted(owner),
            quoted(name)
        ));
        for (alias, expression) in blobs {
            query.push_str(&format!(
                "    {alias}: object(expression: {}) {{ ... on Blob {{ oid byteSize isBinary isTruncated text }} }}\n",
                quoted(expression)
            ));
        }
        query.push_str("  }\n");
    }
    query.push_str("}\n");
    (query, aliases)
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}
