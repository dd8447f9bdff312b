//! The organisation's directory: its teams and members, by GitHub's ids.
//!
//! The directory is a source role beside the lister and the storage: the
//! GitHub source reads it by GraphQL with the listing and when a `team`,
//! `membership` or `organization` webhook asks; the local `dir:` source
//! reads it from `teams.yaml`. Either way it is written here (`db.rs` holds
//! every statement on the `directory_*` tables), and owners are resolved
//! against it by [`resolve`] (pure), so the same owner rules can run
//! wherever a project file is checked.

pub mod change;
pub mod db;
pub mod follow;
pub mod lookup;
pub mod mode;
pub mod resolve;

pub use db::DirectoryDb;
pub use mode::OwnersMode;
pub use resolve::{resolve, Resolution};

/// The account id the local folder's directory is kept under (GitHub's
/// account ids start at 1).
pub const LOCAL_ORG_ID: i64 = 0;

/// The local folder's account login: the owner of its repositories.
pub const LOCAL_LOGIN: &str = "local";

crate::row! {
    /// One team, as the directory keeps it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Team {
        /// GitHub's numeric id (a stable hash of the slug for the local folder).
        pub id: i64,
        pub slug: String,
        pub name: String,
        pub parent_id: Option<i64>,
        /// A secret team is only shown to the API token or a signed-in session.
        pub secret: bool,
    }
}

/// One member of the organisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: i64,
    pub login: String,
}

/// The two parts of an account's directory, each read on its own and
/// finished on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Teams,
    Members,
}

/// One page of a read, as it is written: its teams or its members.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    Teams(&'a [Team]),
    Members(&'a [Member]),
}

/// Why owners of an account are not checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unchecked {
    /// A personal account: only `@login` of the account itself resolves.
    Personal,
    /// The directory could not be read (GitHub refused the teams: the App
    /// lacks `members: read`); the reason is what was said.
    Off(String),
}

crate::row! {
    /// A team the directory still remembers, current or not.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct KnownTeam {
        pub team: Team as flatten,
        pub deleted: bool,
    }
}

/// What the resolver reads: one account's directory, loaded at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    pub org_id: i64,
    /// The account's current login.
    pub login: String,
    /// Logins the account had before (lower case), current one excluded.
    pub former_logins: Vec<String>,
    /// Every team remembered, deleted ones included.
    pub teams: Vec<KnownTeam>,
    /// Every slug a team had (lower case), with the team's id.
    pub slugs: Vec<(String, i64)>,
    pub members: Vec<Member>,
    /// Set when owners of this account are not checked.
    pub unchecked: Option<Unchecked>,
}

/// The local folder's teams and members, as its `teams.yaml` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamsFile {
    pub teams: Vec<Team>,
    /// Every login named by some team, once.
    pub members: Vec<Member>,
}
