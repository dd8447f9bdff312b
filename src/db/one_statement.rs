//! Writes of several tables' owners in one statement: one round trip and
//! one implicit transaction, instead of `BEGIN`, a statement per owner and
//! `COMMIT`.
//!
//! Each owner keeps its statement: a [`Part`] holds its SQL (parameters
//! numbered from `$1`) and the values to bind. [`execute_and_notify`] renumbers the
//! parameters and runs the parts as data-modifying `WITH` queries of one
//! statement. The parts share one snapshot and none sees the rows another
//! writes, so only parts that do not read each other's tables may be joined
//! (a webhook group's: repositories made known, ids enqueued, deliveries
//! recorded). The statement commits by itself: a failed part writes nothing.

use std::fmt::Write as _;

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::PgExecutor;

/// One owner's write, ready to run alone or joined with others.
pub trait Part: Sync {
    /// The statement, with its parameters numbered from `$1`.
    fn sql(&self) -> &'static str;
    /// Adds the parameters' values in the order of their numbers.
    fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError>;
    /// The name the parts after it read its rows by, and what it returns
    /// (`RETURNING` list); `None`: nothing to read (it is named by its place).
    fn returns(&self) -> Option<(&'static str, &'static str)> {
        None
    }
}

/// Runs one part as its own statement.
pub async fn execute_one<'e, E>(executor: E, part: &dyn Part) -> Result<(), sqlx::Error>
where
    E: PgExecutor<'e>,
{
    let mut args = PgArguments::default();
    part.add_to(&mut args).map_err(sqlx::Error::Encode)?;
    sqlx::query_with(part.sql(), args).execute(executor).await?;
    Ok(())
}

/// Runs every part in one statement, in the order given (so that row
/// locks are taken in the same order as by the owners' transactions), and
/// sends a `NOTIFY` on `channel` when part number `part` wrote a row:
/// listeners hear of the rows with the commit, never of rows rolled back,
/// and without a statement of their own. Returns whether it did, so that
/// the caller wakes its own waiters only then.
pub async fn execute_and_notify<'e, E>(
    executor: E,
    parts: &[&dyn Part],
    channel: &str,
    part: usize,
) -> Result<bool, sqlx::Error>
where
    E: PgExecutor<'e>,
{
    let mut args = PgArguments::default();
    for part in parts {
        part.add_to(&mut args).map_err(sqlx::Error::Encode)?;
    }
    sqlx::Arguments::add(&mut args, channel).map_err(sqlx::Error::Encode)?;
    let sql = joined(parts.iter().map(|p| (p.sql(), p.returns())), Some(part));
    let row = sqlx::query_with(&sql, args).fetch_one(executor).await?;
    let written: i64 = sqlx::Row::try_get(&row, part)?;
    Ok(written > 0)
}

/// The parts' statements as one:
/// `WITH part0 AS (… RETURNING 1), … SELECT (SELECT count(*) FROM part0), …`
/// (a part that [`Part::returns`] something is named and returns as it says),
/// each part's parameters moved past the ones before it; with `notify`, a
/// last `pg_notify` whose channel is the parameter after the parts'. The main query
/// reads the parts one after another, so they run (and take their row
/// locks) in the order given; PostgreSQL would run parts nothing reads in
/// an order of its own, and writers that lock tables in different orders
/// deadlock.
fn joined<'a>(
    statements: impl Iterator<Item = (&'a str, Option<(&'a str, &'a str)>)>,
    notify: Option<usize>,
) -> String {
    let mut sql = String::from("WITH ");
    let mut reads = Vec::new();
    let mut names = Vec::new();
    let mut offset = 0;
    for (i, (statement, returns)) in statements.enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let (moved, count) = renumbered(statement, offset);
        let (name, returning) = match returns {
            Some((name, returning)) => (name.to_owned(), returning),
            None => (format!("part{i}"), "1"),
        };
        // Writing to a String cannot fail.
        let _ = write!(sql, "{name} AS ({moved} RETURNING {returning})");
        reads.push(format!("(SELECT count(*) FROM {name})"));
        names.push(name);
        offset += count;
    }
    if let Some(name) = notify.and_then(|part| names.get(part)) {
        let channel = offset + 1;
        reads.push(format!(
            "CASE WHEN EXISTS (SELECT FROM {name}) THEN pg_notify(${channel}, '') END"
        ));
    }
    let _ = write!(sql, " SELECT {}", reads.join(", "));
    sql
}

/// `statement` with each `$n` made `$(n + offset)`, and the highest `n`.
fn renumbered(statement: &str, offset: usize) -> (String, usize) {
    let mut out = String::with_capacity(statement.len() + 16);
    let mut highest = 0;
    let mut rest = statement;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(n) = rest[..digits].parse::<usize>() {
            highest = highest.max(n);
            let _ = write!(out, "{}", n + offset);
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    (out, highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_should_move_past_the_parts_before() {
        let sql = joined(
            [
                "insert into a select * from unnest($1::int[], $2::text[])",
                "insert into b values ($1, $3, $2)",
            ]
            .into_iter()
            .map(|s| (s, None)),
            None,
        );
        assert_eq!(
            sql,
            "WITH part0 AS (insert into a select * from unnest($1::int[], $2::text[]) RETURNING 1), \
             part1 AS (insert into b values ($3, $5, $4) RETURNING 1) \
             SELECT (SELECT count(*) FROM part0), (SELECT count(*) FROM part1)"
        );
    }

    #[test]
    fn a_dollar_without_a_number_should_stay() {
        assert_eq!(
            renumbered("select $$x$$, $10", 2),
            ("select $$x$$, $12".to_owned(), 10)
        );
    }

    /// A part that records when it ran, in table `runs`.
    struct Stamp(&'static str);

    impl Part for Stamp {
        fn sql(&self) -> &'static str {
            "insert into runs (part, at) values ($1, clock_timestamp())"
        }

        fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
            sqlx::Arguments::add(args, self.0)
        }
    }

    /// A fresh database with the table [`Stamp`] writes to.
    async fn with_runs() -> sqlx::PgPool {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        sqlx::query("create table runs (part text primary key, at timestamptz not null)")
            .execute(&pool)
            .await
            .expect("the table");
        pool
    }

    #[tokio::test]
    async fn parts_should_run_in_the_order_given() {
        let pool = with_runs().await;
        let names = ["first", "second", "third", "fourth"];
        let stamps: Vec<Stamp> = names.iter().map(|n| Stamp(n)).collect();
        let parts: Vec<&dyn Part> = stamps.iter().map(|s| s as &dyn Part).collect();
        execute_and_notify(&pool, &parts, "one_statement_test", 0)
            .await
            .expect("the statement");
        let order: Vec<String> = sqlx::query_scalar("select part from runs order by at")
            .fetch_all(&pool)
            .await
            .expect("the runs");
        assert_eq!(order, names);
    }

    /// A part that writes nothing.
    struct Nothing;

    impl Part for Nothing {
        fn sql(&self) -> &'static str {
            "insert into runs (part, at) select $1, clock_timestamp() where false"
        }

        fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
            sqlx::Arguments::add(args, "never")
        }
    }

    /// The payload of the next notification (a test fails rather than
    /// hang when none comes).
    async fn heard(listener: &mut sqlx::postgres::PgListener) -> String {
        tokio::time::timeout(std::time::Duration::from_secs(30), listener.recv())
            .await
            .expect("a notification")
            .expect("the listener")
            .payload()
            .to_owned()
    }

    #[tokio::test]
    async fn the_notification_should_go_with_the_commit_when_its_part_wrote() {
        let pool = with_runs().await;
        let mut listener = sqlx::postgres::PgListener::connect_with(&pool)
            .await
            .expect("a listener");
        listener
            .listen("one_statement_test")
            .await
            .expect("listening");
        // Part 1 writes nothing; then part 1 fails with the statement.
        let sent = execute_and_notify(&pool, &[&Stamp("a"), &Nothing], "one_statement_test", 1)
            .await
            .expect("the statement");
        assert!(!sent);
        let (b, again) = (Stamp("b"), Stamp("b"));
        assert!(
            execute_and_notify(&pool, &[&b, &again], "one_statement_test", 1)
                .await
                .is_err()
        );
        // Notifications arrive in commit order: the marker comes first only
        // if neither statement above sent one.
        sqlx::query("select pg_notify('one_statement_test', 'marker')")
            .execute(&pool)
            .await
            .expect("the marker");
        let sent = execute_and_notify(&pool, &[&Nothing, &Stamp("c")], "one_statement_test", 1)
            .await
            .expect("the statement");
        assert!(sent);
        assert_eq!(heard(&mut listener).await, "marker");
        assert_eq!(heard(&mut listener).await, "");
    }

    #[tokio::test]
    async fn a_failing_part_should_leave_the_others_unwritten() {
        let pool = with_runs().await;
        // The second insert of the same key fails the whole statement.
        let (a, b) = (Stamp("same"), Stamp("same"));
        assert!(
            execute_and_notify(&pool, &[&Stamp("other"), &a, &b], "one_statement_test", 0)
                .await
                .is_err()
        );
        let count: i64 = sqlx::query_scalar("select count(*) from runs")
            .fetch_one(&pool)
            .await
            .expect("a count");
        assert_eq!(count, 0);
    }
}
