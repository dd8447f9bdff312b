//! Hostile input, pinned down: every input the fuzz targets (`fuzz/`) found
//! to break a promise, plus the classic attacks on parsers (alias bomb,
//! huge declared length, deep nesting, invalid UTF-8). Each must give a
//! clear error quickly and within a small, fixed amount of memory.
//!
//! Memory is measured by a counting global allocator. It counts per thread,
//! so that tests running side by side do not disturb each other's figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use roster::intake::event::{self, WebhookEvent};
use roster::intake::signature::{sign, verify, SignatureError};
use roster::project::{self, Problems, MAX_FILE_BYTES};
use secrecy::SecretString;

struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn on_alloc(size: usize) {
    // `try_with` fails only while the thread is being torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_add(size);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn on_dealloc(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(size)));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        on_dealloc(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_dealloc(layout.size());
        on_alloc(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one call cost: the fastest of three runs, and the most memory it
/// held at once above what was live before it started.
struct Cost<T> {
    value: T,
    time: Duration,
    peak_bytes: usize,
}

fn measure<T>(mut f: impl FnMut() -> T) -> Cost<T> {
    let mut time = Duration::MAX;
    let mut peak_bytes = 0;
    let mut value = None;
    for _ in 0..3 {
        let before = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(before));
        let start = Instant::now();
        let result = f();
        time = time.min(start.elapsed());
        peak_bytes = peak_bytes.max(PEAK.with(Cell::get) - before);
        value = Some(result);
    }
    match value {
        Some(value) => Cost {
            value,
            time,
            peak_bytes,
        },
        None => unreachable!("the loop runs three times"),
    }
}

/// Generous bounds: a debug build on a busy machine still meets them by far;
/// `cargo test --release -- --nocapture` prints the real figures.
const FAST: Duration = Duration::from_millis(100);
const SMALL: usize = 8 * 1024 * 1024;

fn assert_cheap<T>(what: &str, input_bytes: usize, cost: &Cost<T>) {
    println!(
        "{what}: {input_bytes} bytes of input, {:?}, peak {} bytes",
        cost.time, cost.peak_bytes
    );
    assert!(cost.time < FAST, "{what} took {:?}", cost.time);
    assert!(
        cost.peak_bytes < SMALL,
        "{what} held {} bytes at once",
        cost.peak_bytes
    );
}

fn problems_of(bytes: &[u8]) -> Vec<String> {
    match project::parse("project.yaml", bytes) {
        Ok(file) => panic!("accepted: {file:?}"),
        Err(Problems(problems)) => problems.iter().map(ToString::to_string).collect(),
    }
}

/// Billion laughs: nine levels of nine aliases each, a 300-byte file that
/// would expand to 387 million strings.
fn alias_bomb() -> String {
    let mut yaml = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let letters: Vec<char> = ('a'..='j').collect();
    for pair in letters.windows(2) {
        let refs = vec![format!("*{}", pair[0]); 9].join(",");
        yaml.push_str(&format!("{}: &{} [{refs}]\n", pair[1], pair[1]));
    }
    yaml
}

#[test]
fn a_yaml_alias_bomb_should_be_refused_in_milliseconds_and_little_memory() {
    let yaml = alias_bomb();
    let cost = measure(|| problems_of(yaml.as_bytes()));
    assert_cheap("alias bomb", yaml.len(), &cost);
    assert_eq!(cost.value.len(), 1, "{:?}", cost.value);
    assert!(
        cost.value[0]
            .contains("yaml: this alias expands the document past the limit of 262144 bytes"),
        "{:?}",
        cost.value
    );
}

#[test]
fn aliases_expanding_to_a_gibibyte_should_be_refused_early() {
    // 64 KiB anchored once, then named 16,384 times: 1 GiB when expanded.
    let mut yaml = format!("big: &big \"{}\"\nmore: [", "x".repeat(64 * 1024));
    yaml.push_str(&vec!["*big"; 16 * 1024].join(","));
    yaml.push_str("]\n");
    assert!(yaml.len() <= MAX_FILE_BYTES);
    let cost = measure(|| problems_of(yaml.as_bytes()));
    assert_cheap("large aliases", yaml.len(), &cost);
    assert!(
        cost.value[0].starts_with("project.yaml:2:")
            && cost.value[0].contains("this alias expands the document past the limit"),
        "{:?}",
        cost.value
    );
}

#[test]
fn a_size_claim_of_one_gibibyte_should_be_refused_before_reading() {
    let cost = measure(|| project::check_size("project.yaml", 1 << 30));
    assert_cheap("1 GiB size claim", 0, &cost);
    let Err(Problems(problems)) = cost.value else {
        panic!("a 1 GiB claim was accepted")
    };
    assert_eq!(
        problems[0].to_string(),
        "project.yaml: file: is 1073741824 bytes, more than the limit of 262144 bytes (256 KiB)"
    );
}

#[test]
fn a_one_gibibyte_file_should_be_refused_by_check_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("project.yaml");
    // Sparse: the file claims 1 GiB and costs no disk.
    std::fs::File::create(&path)
        .and_then(|file| file.set_len(1 << 30))
        .unwrap();
    let cost = measure(|| {
        let mut out = Vec::new();
        let code = roster::check_command::run(&path, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    });
    assert_cheap("1 GiB file", 1 << 30, &cost);
    let (code, out) = cost.value;
    assert_eq!(code, 1);
    assert!(
        out.contains("file: is 1073741824 bytes, more than the limit of 262144 bytes"),
        "{out}"
    );
}

#[test]
fn an_endless_file_that_claims_no_size_should_be_read_only_to_the_limit() {
    let path = PathBuf::from("/dev/zero");
    if !path.exists() {
        return;
    }
    let cost = measure(|| {
        let mut out = Vec::new();
        let code = roster::check_command::run(&path, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    });
    assert_cheap("endless file", MAX_FILE_BYTES + 1, &cost);
    let (code, out) = cost.value;
    assert_eq!(code, 1);
    assert!(
        out.contains("file: is 262145 bytes, more than the limit"),
        "{out}"
    );
}

#[test]
fn deeply_nested_yaml_should_be_refused_in_milliseconds_and_little_memory() {
    let cases = [
        ("flow lists", "[".repeat(100_000)),
        ("flow mappings", "{a: ".repeat(50_000)),
        ("block lists", format!("{}x\n", "- ".repeat(100_000))),
        (
            "block mappings",
            (0..2_000)
                .map(|depth| format!("{}k:\n", " ".repeat(depth)))
                .collect::<String>(),
        ),
    ];
    for (what, yaml) in cases {
        let yaml = &yaml.as_bytes()[..yaml.len().min(MAX_FILE_BYTES)];
        let cost = measure(|| problems_of(yaml));
        assert_cheap(what, yaml.len(), &cost);
        assert_eq!(cost.value.len(), 1, "{what}: {:?}", cost.value);
        assert!(
            cost.value[0].contains("yaml: nesting is too deep"),
            "{what}: {:?}",
            cost.value
        );
    }
}

#[test]
fn invalid_utf8_should_be_refused_in_milliseconds_and_little_memory() {
    // The worst place for the bad byte is the very end of the largest file.
    let mut bytes = b"name: a\nowner: b\ndescription: ".to_vec();
    bytes.resize(MAX_FILE_BYTES - 1, b'x');
    bytes.push(0xff);
    let cost = measure(|| problems_of(&bytes));
    assert_cheap("invalid UTF-8", bytes.len(), &cost);
    assert_eq!(
        cost.value,
        [format!(
            "project.yaml:3:{}: file: is not valid UTF-8 (byte 0xff at offset {})",
            MAX_FILE_BYTES - 17,
            MAX_FILE_BYTES - 1
        )]
    );
}

/// A file of the largest size made of `head`, then `item` repeated with
/// `separator` between, then `tail`.
fn largest_file(head: &str, item: &str, separator: &str, tail: &str) -> String {
    let mut yaml = format!("{head}{item}");
    while yaml.len() + separator.len() + item.len() + tail.len() <= MAX_FILE_BYTES {
        yaml.push_str(separator);
        yaml.push_str(item);
    }
    yaml.push_str(tail);
    yaml
}

// docs/contract.md#bounds: a file breaking a rule on every few bytes gives 100 problems and
// one line counting the rest, at the cost of one read of the file.
#[test]
fn a_file_breaking_a_rule_everywhere_should_report_a_hundred_problems_cheaply() {
    let cases = [
        (
            "87,000 empty projects",
            largest_file("projects: [", "{}", ",", "]\n"),
            "project.yaml: file: … and 101 more problems",
        ),
        (
            "40,000 unknown keys",
            largest_file("name: a\nowner: b\n", "k: 1", "\nk: 1\n", "\n"),
            "more problems",
        ),
        (
            "130,000 bad tags",
            largest_file("name: a\nowner: b\ntags: [", "A", ",", "]\n"),
            "more problems",
        ),
    ];
    for (what, yaml, last) in cases {
        assert!(yaml.len() <= MAX_FILE_BYTES);
        let cost = measure(|| problems_of(yaml.as_bytes()));
        println!(
            "{what}: {} lines, {} bytes of problems",
            cost.value.len(),
            cost.value.iter().map(|l| l.len() + 1).sum::<usize>()
        );
        assert_cheap_enough(what, yaml.len(), &cost);
        assert_eq!(cost.value.len(), 101, "{what}");
        assert!(
            cost.value[100].starts_with("project.yaml: file: … and ")
                && cost.value[100].ends_with(last),
            "{what}: {}",
            cost.value[100]
        );
    }
}

/// Reading a whole file of the largest size into its tree costs more than
/// refusing it early: most of it is the YAML parser's, in proportion to the
/// file (about 0.5 s and 25 MiB for 130,000 nodes in a debug build on a busy
/// machine). The bounds catch anything that grows faster than the file.
fn assert_cheap_enough<T>(what: &str, input_bytes: usize, cost: &Cost<T>) {
    println!(
        "{what}: {input_bytes} bytes of input, {:?}, peak {} bytes",
        cost.time, cost.peak_bytes
    );
    assert!(
        cost.time < Duration::from_secs(5),
        "{what} took {:?}",
        cost.time
    );
    assert!(
        cost.peak_bytes < 4 * SMALL,
        "{what} held {} bytes at once",
        cost.peak_bytes
    );
}

#[test]
fn deeply_nested_json_webhook_should_be_refused_in_milliseconds_and_little_memory() {
    let body = "[".repeat(1_000_000);
    let cost = measure(|| event::parse("push", body.as_bytes()).map(|_| ()));
    assert_cheap("nested JSON", body.len(), &cost);
    let Err(error) = cost.value else {
        panic!("nested JSON was accepted")
    };
    assert!(
        error.to_string().contains("recursion limit exceeded"),
        "{error}"
    );
}

#[test]
fn webhook_body_that_is_not_utf8_should_be_refused_in_milliseconds() {
    let mut body = br#"{"zen":""#.to_vec();
    body.resize(1024 * 1024, b'x');
    body.extend_from_slice(b"\xff\"}");
    let cost = measure(|| event::parse("ping", &body).map(|_| ()));
    assert_cheap("webhook invalid UTF-8", body.len(), &cost);
    let Err(error) = cost.value else {
        panic!("invalid UTF-8 was accepted")
    };
    assert!(error.to_string().starts_with("body is not JSON"), "{error}");
}

#[test]
fn webhook_signature_should_refuse_every_malformed_header_quickly() {
    let secret = SecretString::from("s3cret");
    let body = vec![b'x'; 64 * 1024];
    let good = sign("s3cret", &body);
    let headers: [&[u8]; 5] = [
        b"",
        b"sha256=",
        b"sha256=\xff\xfe",
        &[b'a'; 64 * 1024],
        b"sha256=0000000000000000000000000000000000000000000000000000000000000000",
    ];
    for header in headers {
        let cost = measure(|| verify(&secret, Some(header), &body));
        assert_cheap("signature", body.len(), &cost);
        assert!(cost.value.is_err());
    }
    assert_eq!(verify(&secret, Some(good.as_bytes()), &body), Ok(()));
    assert_eq!(verify(&secret, None, &body), Err(SignatureError::Missing));
}

fn fuzz_corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    seeds.sort();
    seeds
}

#[test]
fn the_project_seed_corpus_should_hold_every_example_file() {
    let seeds = fuzz_corpus("project_parse");
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    let mut count = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let folder = entry.unwrap().path();
        let Ok(bytes) = std::fs::read(folder.join("project.yaml")) else {
            continue;
        };
        let name = format!("{}.yaml", folder.file_name().unwrap().to_string_lossy());
        assert!(
            seeds.contains(&(name.clone(), bytes)),
            "fuzz/corpus/project_parse/{name} differs from its example"
        );
        count += 1;
    }
    assert!(count >= 10, "only {count} examples");
}

#[test]
fn the_webhook_seed_corpus_should_parse_into_the_events_of_its_fixtures() {
    for (name, bytes) in fuzz_corpus("webhook_event") {
        let Some(at) = bytes.iter().position(|&b| b == b'\n') else {
            panic!("{name}: no event line")
        };
        let kind = String::from_utf8_lossy(&bytes[..at]);
        let parsed = event::parse(&kind, &bytes[at + 1..])
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .event;
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks")
            .join(format!("{name}.json"));
        if let Ok(original) = std::fs::read(&fixture) {
            let expected = event::parse(&kind, &original).unwrap().event;
            assert_eq!(parsed, expected, "{name}");
        } else {
            assert!(matches!(parsed, WebhookEvent::Ignored { .. }), "{name}");
        }
    }
}

/// Splits a `webhook_route` seed as the target does: header lines, an empty
/// line, the body; a signature of `SIGN` becomes the body's real one.
fn route_seed(bytes: &[u8], secret: &str) -> (axum::http::HeaderMap, Vec<u8>) {
    use axum::http::{HeaderName, HeaderValue};
    let (head, body) = match bytes.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&bytes[..at], &bytes[at + 2..]),
        None => (bytes, &[][..]),
    };
    let mut headers = axum::http::HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let (name, value) = text.split_once(':').expect("a header line");
        let name = HeaderName::from_bytes(name.trim().as_bytes()).expect("a header name");
        let value = match value.trim() {
            "SIGN" if name == "x-hub-signature-256" => sign(secret, body),
            other => other.to_owned(),
        };
        headers.append(name, HeaderValue::from_str(&value).expect("a header value"));
    }
    (headers, body.to_vec())
}

#[test]
fn the_webhook_route_seeds_should_reach_every_answer_of_the_route() {
    use roster::intake::verified::{after_body, before_body};
    let secret = "fuzz secret";
    let key = secrecy::SecretString::from(secret);
    let mut answers = std::collections::BTreeMap::new();
    for (name, bytes) in fuzz_corpus("webhook_route") {
        let (headers, body) = route_seed(&bytes, secret);
        let status = match before_body(&headers) {
            Err(refusal) => refusal.status.as_u16(),
            Ok(_) => match after_body(&key, &headers, &body) {
                Ok(_) => 202,
                Err(refusal) => refusal.status.as_u16(),
            },
        };
        answers.insert(name, status);
    }
    let expected: std::collections::BTreeMap<String, u16> = [
        ("event.unknown", 202),
        ("installation_repositories.signed", 202),
        ("length.100mib", 413),
        ("length.twice", 400),
        ("ping.signed", 202),
        ("push.forged", 401),
        ("push.negative-id", 400),
        ("push.unsigned", 401),
    ]
    .into_iter()
    .map(|(name, status)| (name.to_owned(), status))
    .collect();
    assert_eq!(answers, expected);
}

/// What an unknown key is told it may be instead (the list is checked once,
/// beside the table of fields).
fn known() -> String {
    format!(
        "(expected one of {})",
        project::fields::file_keys().join(", ")
    )
}

// Found by `project_parse` (its first input, within a second): a value or key
// holding a line break was quoted as is, so one problem printed over two
// lines and broke docs/contract.md#the-project-file's `FILE:LINE:COLUMN: FIELD: message` format.
#[test]
fn a_line_break_inside_a_quoted_value_should_keep_each_problem_on_one_line() {
    let found = problems_of(b"name: \"a\\nb\"\nowner: b\n\"x\\ry\\u2028\": 1\n");
    assert_eq!(
        found,
        [
            "project.yaml:1:7: name: must contain only lowercase letters, digits and '-', found \"a\\nb\"".to_owned(),
            format!("project.yaml:3:1: x\\ry\\u{{2028}}: unknown field {}", known()),
        ]
    );
}

// Found by `project_parse` with the same input: an empty quoted key gave a
// problem with a blank FIELD.
#[test]
fn an_empty_quoted_key_should_be_named_in_its_problem() {
    let found = problems_of(b"name: a\nowner: b\n\"\": x\n");
    assert_eq!(
        found,
        [format!("project.yaml:3:1: \"\": unknown field {}", known())]
    );
}

// Found by `project_parse` after 711,652 runs: a quoted empty key next to
// `projects` gave a blank FIELD too, by another path.
#[test]
fn an_empty_quoted_key_next_to_projects_should_be_named_in_its_problem() {
    let found = problems_of(b"\"\": x\nprojects:\n  - name: a\n    owner: b\n");
    assert_eq!(
        found,
        ["project.yaml:1:1: \"\": unknown field next to projects (a project's fields go inside its item of the list)"]
    );
}
