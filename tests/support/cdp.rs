//! A headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: JSON messages ended by a NUL byte on file
//! descriptors 3 and 4), so a test can click through pages as a person
//! would, forms and redirects included.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Longest one protocol answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// `chromium` on PATH, if any.
pub fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
}

/// One browser with one page.
pub struct Browser {
    _child: Child,
    commands: ChildStdin,
    answers: BufReader<ChildStdout>,
    next_id: u64,
    session: String,
}

impl Browser {
    /// Starts `binary` headless in a fresh profile under `profile`, with
    /// one blank page attached.
    pub async fn start(binary: &Path, profile: &Path) -> Browser {
        // The shell hands the pipes to Chromium as descriptors 3 and 4.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromium");
        let commands = child.stdin.take().expect("chromium's command pipe");
        let answers = BufReader::new(child.stdout.take().expect("chromium's answer pipe"));
        let mut browser = Browser {
            _child: child,
            commands,
            answers,
            next_id: 0,
            session: String::new(),
        };
        let target = browser
            .call(None, "Target.createTarget", json!({ "url": "about:blank" }))
            .await;
        let target_id = target["targetId"].as_str().expect("target id").to_owned();
        let attached = browser
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await;
        browser.session = attached["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned();
        browser
    }

    /// Sends a command and returns its result (events in between are
    /// skipped); panics on a protocol error.
    async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        match self.try_call(session, method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method}: {error}"),
        }
    }

    async fn try_call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .await
            .map_err(|e| e.to_string())?;
        self.commands.flush().await.map_err(|e| e.to_string())?;
        loop {
            let mut raw = Vec::new();
            let read = tokio::time::timeout(ANSWER_TIMEOUT, self.answers.read_until(0, &mut raw))
                .await
                .map_err(|_| format!("no answer within {ANSWER_TIMEOUT:?}"))?
                .map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("chromium closed the pipe".into());
            }
            raw.pop();
            let answer: Value = serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
            if answer["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(error) = answer.get("error") {
                return Err(error.to_string());
            }
            return Ok(answer["result"].clone());
        }
    }

    /// Runs `source` in every document the page opens from now on, before
    /// the document's own scripts (the browser injects it, so the page's
    /// Content-Security-Policy does not apply to it): a test's listener
    /// sees what happens while the page loads.
    pub async fn on_every_document(&mut self, source: &str) {
        let session = self.session.clone();
        self.call(Some(&session), "Page.enable", json!({})).await;
        self.call(
            Some(&session),
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
        )
        .await;
    }

    /// Opens `url` in the page.
    pub async fn goto(&mut self, url: &str) {
        let session = self.session.clone();
        self.call(Some(&session), "Page.navigate", json!({ "url": url }))
            .await;
    }

    /// A PNG of the page as it is, `width` by `height` CSS pixels.
    pub async fn screenshot(&mut self, width: u32, height: u32) -> Vec<u8> {
        use base64::Engine;
        let session = self.session.clone();
        self.call(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await;
        let shot = self
            .call(
                Some(&session),
                "Page.captureScreenshot",
                json!({ "format": "png" }),
            )
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .expect("a base64 PNG")
    }

    /// The value of `expression` in the page; `None` while there is no
    /// page to ask (between two documents) or it throws.
    pub async fn eval(&mut self, expression: &str) -> Option<Value> {
        let session = self.session.clone();
        let result = self
            .try_call(
                Some(&session),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await
            .ok()?;
        if result.get("exceptionDetails").is_some() {
            return None;
        }
        Some(result["result"]["value"].clone())
    }

    /// Waits until `expression` is `true` in the page; panics with the
    /// page's address and text after `limit`.
    pub async fn wait_for(&mut self, what: &str, expression: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if self.eval(expression).await == Some(Value::Bool(true)) {
                return;
            }
            if Instant::now() > deadline {
                let page = self
                    .eval("location.href + '\\n' + document.body.innerText")
                    .await;
                panic!("timed out waiting for {what}; the page: {page:?}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}
