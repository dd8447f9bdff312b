//! The `roster` command: `serve`, `migrate`, `check` and `setup`.
//!
//! Exit codes: 0 success; 1 a runtime failure (or, for `check`, an invalid
//! file); 2 a misconfiguration found at start (`error: SETTING: message`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use secrecy::ExposeSecret;

use roster::config::{ConfigError, DatabaseArgs, DatabaseSettings, ServeArgs, SetupArgs};
use roster::db::embedded::EmbeddedPostgres;
use roster::db::DbError;

/// What `roster --version` prints after the name: the version and the
/// commit the binary was built from (build.rs), as `roster_build_info` says.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (revision ",
    env!("ROSTER_REVISION"),
    ")"
);

/// How long the first connection to the database may take at start.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long the database connections may take to close at exit.
const POOL_CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Keeps an organisation's project registry in sync with the project.yaml
/// files in its GitHub repositories.
#[derive(Debug, Parser)]
#[command(name = "roster", version = VERSION)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server: webhooks, API, dashboard, workers, periodic listing.
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit.
    Migrate(DatabaseArgs),
    /// Validate project files and print every problem (exit 1 when one is
    /// invalid or two declare one name, 2 when a file cannot be read).
    Check {
        /// The project files to check, as the files of one repository
        /// (default: project.yaml, or with --project-files the files that
        /// match it under the current folder).
        files: Vec<PathBuf>,
        /// Where project files lie in the repository, as the server's
        /// ROSTER_PROJECT_FILES (e.g. 'project.yaml,services/*/project.yaml'):
        /// every file under the current folder that matches is checked.
        #[arg(long, value_name = "PATTERNS", conflicts_with = "files")]
        project_files: Option<String>,
        /// Check each `owner` against this teams.yaml (the local folder's
        /// format); without it owners are not checked.
        #[arg(long, value_name = "TEAMS_YAML")]
        teams: Option<PathBuf>,
        /// With --teams: `warn` prints an owner that names nobody as a
        /// warning, `require` makes it a problem (exit 1).
        #[arg(long, default_value = "warn", requires = "teams")]
        owners: roster::directory::OwnersMode,
    },
    /// Print the project file's JSON Schema (for editors).
    Schema,
    /// The GitHub App stored by setup: `--print-env` prints it as
    /// environment lines.
    Setup(Box<SetupArgs>),
}

/// A failure that ends the process: what to print and the exit code.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn config(e: ConfigError) -> Self {
        Failure {
            code: 2,
            message: e.to_string(),
        }
    }

    fn runtime(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}

fn main() -> ExitCode {
    roster::metrics::set_revision(env!("ROSTER_REVISION"));
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Check {
            files,
            project_files,
            teams,
            owners,
        } => {
            let files = match project_files {
                Some(patterns) => {
                    match roster::check_command::files_matching(
                        std::path::Path::new("."),
                        &patterns,
                    ) {
                        Ok(found) => found,
                        Err(message) => {
                            eprintln!("error: {message}");
                            return ExitCode::from(2);
                        }
                    }
                }
                None if files.is_empty() => vec![PathBuf::from("project.yaml")],
                None => files,
            };
            let files: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
            let rules = match teams.map(|t| roster::check_command::OwnerRules::read(&t, owners)) {
                Some(Err(message)) => {
                    eprintln!("error: {message}");
                    return ExitCode::from(2);
                }
                Some(Ok(rules)) => Some(rules),
                None => None,
            };
            let code =
                roster::check_command::run_checked(&files, rules.as_ref(), &mut std::io::stdout());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Command::Schema => {
            print!("{}", roster::project::PROJECT_SCHEMA);
            return ExitCode::SUCCESS;
        }
        Command::Serve(args) => with_runtime(|| serve(*args)),
        Command::Migrate(args) => with_runtime(|| migrate(args)),
        Command::Setup(args) => with_runtime(|| setup(*args)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", one_line(&failure.message));
            ExitCode::from(failure.code)
        }
    }
}

fn with_runtime<F, Fut>(run: F) -> Result<(), Failure>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(run());
    // Dropping the runtime would wait for every blocking task, and one stuck
    // in a read that never returns would keep the process alive after its
    // work is done: leave such threads behind instead.
    runtime.shutdown_background();
    outcome
}

async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let settings = args.validate().map_err(Failure::config)?;
    roster::logging::init(settings.log_format);
    let database = DatabaseSettings {
        database_url: settings.database_url.clone(),
        data_dir: settings.data_dir.clone(),
        max_connections: settings.db_max_connections,
    };
    let (url, embedded) = resolve_database(&database).await?;
    let pool = match connect(&url, database.max_connections).await {
        Ok(pool) => pool,
        Err(failure) => {
            stop_embedded(embedded).await;
            return Err(failure);
        }
    };
    let served = roster::app::serve(settings, pool.clone()).await;
    // Close the connections before the private database goes away; a
    // connection still held by a request cut off at shutdown must not keep
    // the private database running.
    if tokio::time::timeout(POOL_CLOSE_LIMIT, pool.close())
        .await
        .is_err()
    {
        tracing::warn!("database connections still in use at exit; leaving them");
    }
    stop_embedded(embedded).await;
    let alive = tasks_left(TASKS_END_LIMIT).await;
    if matches!(served, Err(roster::app::ServeError::Config(_))) {
        // A setting found wrong says so in its one line alone.
        tracing::debug!(alive, "exiting: tasks of the runtime still running");
    } else {
        tracing::info!(alive, "exiting: tasks of the runtime still running");
    }
    served.map_err(|e| match e {
        roster::app::ServeError::Config(e) => Failure::config(e),
        roster::app::ServeError::Runtime(e) => Failure::runtime(format!("{e:#}")),
    })
}

/// How long the exit waits for the tasks owned by what was just dropped
/// (connections of HTTP clients and pools) to notice and end.
const TASKS_END_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The runtime's tasks still running once every one has ended or `limit`
/// passed. The runtime offers no event to await for this, so it looks
/// again every few milliseconds.
async fn tasks_left(limit: std::time::Duration) -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = tokio::time::Instant::now() + limit;
    while metrics.num_alive_tasks() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    metrics.num_alive_tasks()
}

async fn migrate(args: DatabaseArgs) -> Result<(), Failure> {
    let database = args.validate().map_err(Failure::config)?;
    roster::logging::init(roster::config::LogFormat::Text);
    let (url, embedded) = resolve_database(&database).await?;
    let result = connect(&url, database.max_connections).await;
    if let Ok(pool) = &result {
        pool.close().await;
        tracing::info!("migrations applied");
    }
    stop_embedded(embedded).await;
    result.map(|_| ())
}

/// `roster setup --print-env`: the stored App as `KEY=value` lines.
async fn setup(args: SetupArgs) -> Result<(), Failure> {
    if !args.print_env {
        return Err(Failure {
            code: 2,
            message: "roster setup: nothing to do; `roster setup --print-env` prints the \
                      stored App (`roster serve` without an App starts the setup page)"
                .into(),
        });
    }
    let (database, key) = args.validate().map_err(Failure::config)?;
    roster::logging::init(roster::config::LogFormat::Text);
    let key = match key {
        Some(key) => Some(key),
        None if database.database_url.is_none() => Some(
            roster::setup::SecretKey::load_or_create(&database.data_dir).map_err(|e| {
                Failure::config(ConfigError::new("ROSTER_SECRET_KEY", e.to_string()))
            })?,
        ),
        None => None,
    };
    let (url, embedded) = resolve_database(&database).await?;
    let printed = match connect(&url, database.max_connections).await {
        Ok(pool) => {
            let rendered = roster::setup::print_env::render(&pool, key.as_ref()).await;
            pool.close().await;
            rendered.map_err(|e| match e {
                roster::setup::print_env::PrintEnvError::Setting(setting, message) => {
                    Failure::config(ConfigError::new(setting, message))
                }
                other => Failure::runtime(other),
            })
        }
        Err(failure) => Err(failure),
    };
    stop_embedded(embedded).await;
    print!("{}", printed?);
    Ok(())
}

/// Opens the pool and applies migrations. One direct connection first: the
/// pool retries a refused connection until its timeout and then reports
/// only "timed out", while this says why (refused, bad password, no such
/// database) at once.
async fn connect(url: &str, max_connections: u32) -> Result<sqlx::PgPool, Failure> {
    use sqlx::Connection;
    let cannot_connect = |e: &dyn std::fmt::Display| {
        Failure::config(ConfigError::new(
            "DATABASE_URL",
            format!("cannot connect: {e}"),
        ))
    };
    let probe = tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect(url)).await;
    match probe {
        Err(_) => {
            return Err(cannot_connect(&format!(
                "no answer within {}s",
                CONNECT_TIMEOUT.as_secs()
            )))
        }
        Ok(Err(e)) => return Err(cannot_connect(&e)),
        Ok(Ok(mut conn)) => {
            let encoding = server_encoding(&mut conn).await;
            let _ = conn.close().await;
            encoding?;
        }
    }
    roster::db::connect_and_migrate_within(url, max_connections)
        .await
        .map_err(|e| match e {
            DbError::Connect(e) => cannot_connect(&e),
            DbError::Url(e) => Failure::config(ConfigError::new("DATABASE_URL", e.to_string())),
            // The database answered: a failed migration is not a setting.
            other @ DbError::Migrate(_) => Failure::runtime(other),
        })
}

/// Refuses a database whose encoding is not UTF-8: in any other, text
/// from a project file could hold characters the database cannot store,
/// and every write of that repository would fail. (NUL, the one character
/// UTF-8 PostgreSQL cannot store, is refused by the project file's rules.)
async fn server_encoding(conn: &mut sqlx::PgConnection) -> Result<(), Failure> {
    let encoding: String = sqlx::query_scalar("show server_encoding")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| Failure::runtime(format!("cannot read the database's encoding: {e}")))?;
    if encoding.eq_ignore_ascii_case("UTF8") {
        return Ok(());
    }
    Err(Failure::config(ConfigError::new(
        "DATABASE_URL",
        format!(
            "the database's encoding is {encoding}; Roster needs a UTF-8 database \
             (create it with `CREATE DATABASE … ENCODING 'UTF8' TEMPLATE template0`)"
        ),
    )))
}

/// `DATABASE_URL` when set; otherwise the private PostgreSQL under the
/// data folder, started here (and stopped by the caller).
async fn resolve_database(
    database: &DatabaseSettings,
) -> Result<(String, Option<EmbeddedPostgres>), Failure> {
    if let Some(url) = &database.database_url {
        return Ok((url.expose_secret().to_owned(), None));
    }
    let embedded = EmbeddedPostgres::start(&database.data_dir)
        .await
        .map_err(|e| {
            Failure::config(ConfigError::new(
                "DATABASE_URL",
                format!("unset, and the private PostgreSQL did not start: {e}"),
            ))
        })?;
    tracing::info!(
        data_dir = %embedded.data_dir().display(),
        log = %embedded.data_dir().join("postgres.log").display(),
        "using the private PostgreSQL (DATABASE_URL is unset)"
    );
    Ok((embedded.url(), Some(embedded)))
}

async fn stop_embedded(embedded: Option<EmbeddedPostgres>) {
    if let Some(embedded) = embedded {
        if let Err(e) = embedded.stop().await {
            tracing::warn!(error = %e, "could not stop the private PostgreSQL");
        }
    }
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
