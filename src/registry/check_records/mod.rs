//! What the checks keep in the registry's database: the pull requests and
//! commits waiting for an evaluation, the check runs to post and their
//! permission, the default branch's checks written with a reconcile, and
//! the read-only snapshot a pull request is evaluated against.

pub mod check_requests;
pub mod check_runs;
pub mod default_branch_check;
pub(in crate::registry) mod default_branch_files;
pub mod owner_check;
pub mod read_only;
pub mod relation_check;
