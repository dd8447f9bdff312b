//! The id of a GitHub App installation, in a module of its own below the
//! ones that pass it around (the sources, the directory, the GitHub
//! client), so each can name it without importing another; and the macro
//! that defines it and the repository id alike.

/// Defines a GitHub numeric id as a type of its own: an `i64` on the wire
/// and in the database, which the compiler keeps from being mixed up with
/// another kind of id.
#[macro_export]
macro_rules! numeric_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[derive(::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

crate::numeric_id!(
    /// A GitHub App installation's numeric id: the repositories it sees form
    /// one partition.
    InstallationId
);
