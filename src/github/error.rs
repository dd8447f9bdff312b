//! Why the GitHub source could not be set up.

/// A setting the GitHub source cannot work with; shown as
/// `SETTING: message` like the other configuration errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GithubError {
    #[error("GITHUB_APP_PRIVATE_KEY: {}", self.message())]
    PrivateKey(String),
    #[error("GITHUB_API_URL: {}", self.message())]
    ApiUrl(String),
    #[error("GITHUB_GRAPHQL_URL: {}", self.message())]
    GraphqlUrl(String),
    #[error("GITHUB_API_URL: {}", self.message())]
    Client(String),
    /// GitHub refused the App's own token: the id does not match the key.
    #[error("GITHUB_APP_ID: {}", self.message())]
    AppRejected(String),
}

impl GithubError {
    /// The environment variable the error is about.
    pub fn setting(&self) -> &'static str {
        match self {
            GithubError::PrivateKey(_) => "GITHUB_APP_PRIVATE_KEY",
            GithubError::ApiUrl(_) | GithubError::Client(_) => "GITHUB_API_URL",
            GithubError::GraphqlUrl(_) => "GITHUB_GRAPHQL_URL",
            GithubError::AppRejected(_) => "GITHUB_APP_ID",
        }
    }

    /// What is wrong, without the setting's name.
    pub fn message(&self) -> String {
        match self {
            GithubError::PrivateKey(e) => format!("not a usable RSA private key: {e}"),
            GithubError::ApiUrl(e) | GithubError::GraphqlUrl(e) => e.clone(),
            GithubError::Client(e) => format!("cannot build the GitHub client: {e}"),
            GithubError::AppRejected(e) => format!(
                "GitHub refused the App's token ({e}); check that the App id and the private key belong together"
            ),
        }
    }
}
