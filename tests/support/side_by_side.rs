//! The output of a benchmark's rounds when a smoke run runs them side by
//! side (each on a server of its own, the run waiting on the servers far
//! more than computing): each round keeps its lines, printed in the rounds'
//! order once all have ended, so the output reads as a run one after the
//! other. A full run prints each line as it comes.

/// Where one round's lines go.
#[derive(Debug, Default)]
pub struct Lines {
    kept: Option<String>,
}

impl Lines {
    /// Each line printed at once.
    pub fn printed() -> Self {
        Self { kept: None }
    }

    /// The lines kept until [`Lines::print`].
    pub fn kept() -> Self {
        Self {
            kept: Some(String::new()),
        }
    }

    pub fn line(&mut self, text: impl std::fmt::Display) {
        match &mut self.kept {
            Some(kept) => {
                kept.push_str(&text.to_string());
                kept.push('\n');
            }
            None => println!("{text}"),
        }
    }

    /// Prints the kept lines (none are left when they were printed at once).
    pub fn print(self) {
        if let Some(kept) = self.kept {
            print!("{kept}");
        }
    }
}
