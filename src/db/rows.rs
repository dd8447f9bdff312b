//! Reading rows into structs, and Roster's types as column values, written
//! by hand instead of with sqlx's derives: those need sqlx's proc-macro
//! crate, which compiles a second copy of sqlx, tokio and rustls for the
//! compiler (docs/performance.md, "A newcomer's first run").

/// Implements `sqlx::FromRow` for a struct from the list of its fields,
/// each read from the column of its name, as `#[derive(sqlx::FromRow)]`
/// would:
///
/// ```ignore
/// roster::from_row!(Entry { name, fields: flatten, links: json, status: text });
/// ```
///
/// A field is `name` (the column's own type), `name: flatten` (the field's
/// type reads its columns from the same row), `name: json` (a JSON column
/// decoded with serde) or `name: text` (a text column converted with the
/// field type's `TryFrom<String>`). A field left out does not compile.
#[macro_export]
macro_rules! from_row {
    ($ty:ident { $($field:ident $(: $how:ident)?),* $(,)? }) => {
        impl<'r> ::sqlx::FromRow<'r, ::sqlx::postgres::PgRow> for $ty {
            fn from_row(
                row: &'r ::sqlx::postgres::PgRow,
            ) -> ::std::result::Result<Self, ::sqlx::Error> {
                ::std::result::Result::Ok(Self {
                    $($field: $crate::from_row!(@column row, $field $(, $how)?),)*
                })
            }
        }
    };
    (@column $row:ident, $field:ident) => {
        ::sqlx::Row::try_get($row, stringify!($field))?
    };
    (@column $row:ident, $field:ident, flatten) => {
        ::sqlx::FromRow::from_row($row)?
    };
    (@column $row:ident, $field:ident, json) => {
        ::sqlx::Row::try_get::<::sqlx::types::Json<_>, _>($row, stringify!($field))?.0
    };
    (@column $row:ident, $field:ident, text) => {
        ::std::convert::TryFrom::try_from(
            ::sqlx::Row::try_get::<::std::string::String, _>($row, stringify!($field))?,
        )
        .map_err(|e| ::sqlx::Error::ColumnDecode {
            index: stringify!($field).to_owned(),
            source: ::std::boxed::Box::new(e),
        })?
    };
}

/// Declares a struct read from rows: the struct as written, and its
/// [`from_row!`] from the same field list, so each field is named once. A
/// field read other than from its own column says how after its type:
///
/// ```ignore
/// roster::row! {
///     pub struct Entry {
///         pub name: String,
///         pub fields: Fields as flatten,
///         pub links: Vec<Link> as json,
///     }
/// }
/// ```
#[macro_export]
macro_rules! row {
    (
        $(#[$meta:meta])*
        $vis:vis struct $ty:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident : $field_ty:ty $(as $how:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $ty {
            $($(#[$field_meta])* $field_vis $field: $field_ty,)*
        }

        $crate::from_row!($ty { $($field $(: $how)?),* });
    };
}

/// Makes a one-field tuple struct a column value of its field's type, as
/// `#[derive(sqlx::Type)] #[sqlx(transparent)]` would (arrays of it too).
macro_rules! transparent_type {
    ($ty:path, $inner:ty) => {
        impl ::sqlx::Type<::sqlx::Postgres> for $ty {
            fn type_info() -> ::sqlx::postgres::PgTypeInfo {
                <$inner as ::sqlx::Type<::sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <$inner as ::sqlx::Type<::sqlx::Postgres>>::compatible(ty)
            }
        }

        impl ::sqlx::postgres::PgHasArrayType for $ty {
            fn array_type_info() -> ::sqlx::postgres::PgTypeInfo {
                <$inner as ::sqlx::postgres::PgHasArrayType>::array_type_info()
            }

            fn array_compatible(ty: &::sqlx::postgres::PgTypeInfo) -> bool {
                <$inner as ::sqlx::postgres::PgHasArrayType>::array_compatible(ty)
            }
        }

        impl<'r> ::sqlx::Decode<'r, ::sqlx::Postgres> for $ty {
            fn decode(
                value: ::sqlx::postgres::PgValueRef<'r>,
            ) -> ::std::result::Result<Self, ::sqlx::error::BoxDynError> {
                <$inner as ::sqlx::Decode<::sqlx::Postgres>>::decode(value).map($ty)
            }
        }

        impl ::sqlx::Encode<'_, ::sqlx::Postgres> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut ::sqlx::postgres::PgArgumentBuffer,
            ) -> ::std::result::Result<::sqlx::encode::IsNull, ::sqlx::error::BoxDynError> {
                <$inner as ::sqlx::Encode<::sqlx::Postgres>>::encode_by_ref(&self.0, buf)
            }

            fn size_hint(&self) -> usize {
                <$inner as ::sqlx::Encode<::sqlx::Postgres>>::size_hint(&self.0)
            }
        }
    };
}

transparent_type!(crate::source::RepoId, i64);
transparent_type!(crate::installation_id::InstallationId, i64);
