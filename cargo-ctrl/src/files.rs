//! Writing the generated files without overwriting a user's work: a file is written
//! when it does not exist, or when it is exactly as cargo ctrl last wrote it (its hash
//! is recorded in the project state, [`crate::project`]); a file changed since is
//! skipped, and said so.

use std::path::{Path, PathBuf};

use xxhash_rust::xxh64::xxh64;

use crate::project::Project;

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It did not exist.
    Created,
    /// It was as cargo ctrl wrote it, and is now the new version.
    Updated,
    /// It already had these contents.
    Unchanged,
    /// It was changed by someone else since cargo ctrl wrote it (or was never written
    /// by cargo ctrl): left alone.
    Skipped,
}

/// The hash recorded for `contents`.
pub fn hash(contents: &str) -> String {
    format!("{:016x}", xxh64(contents.as_bytes(), 0))
}

/// Writes files under a project root, recording their hashes in `project`.
pub struct Writer<'a> {
    root: PathBuf,
    project: &'a mut Project,
    /// Every file and what happened to it, in order.
    pub outcomes: Vec<(String, Outcome)>,
}

impl<'a> Writer<'a> {
    /// A writer for the project at `root`.
    pub fn new(root: &Path, project: &'a mut Project) -> Self {
        Self {
            root: root.to_path_buf(),
            project,
            outcomes: Vec::new(),
        }
    }

    /// Writes `contents` to `path` (relative to the root) unless the user changed it.
    pub fn write(&mut self, path: &str, contents: &str) -> Result<Outcome, String> {
        let full = self.root.join(path);
        let outcome = match std::fs::read_to_string(&full) {
            Err(_) => Outcome::Created,
            Ok(current) if current == contents => Outcome::Unchanged,
            Ok(current) => match self.project.generated.get(path) {
                Some(recorded) if *recorded == hash(&current) => Outcome::Updated,
                _ => Outcome::Skipped,
            },
        };
        if matches!(outcome, Outcome::Created | Outcome::Updated) {
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            std::fs::write(&full, contents).map_err(|e| format!("{}: {e}", full.display()))?;
        }
        if outcome != Outcome::Skipped {
            self.project
                .generated
                .insert(path.to_string(), hash(contents));
        }
        self.outcomes.push((path.to_string(), outcome.clone()));
        Ok(outcome)
    }

    /// One line per file written or skipped (unchanged files are not mentioned).
    pub fn report(&self) -> String {
        let mut out = String::new();
        for (path, outcome) in &self.outcomes {
            let line = match outcome {
                Outcome::Created => format!("created  {path}\n"),
                Outcome::Updated => format!("updated  {path}\n"),
                Outcome::Unchanged => continue,
                Outcome::Skipped => format!(
                    "skipped  {path} (changed since cargo ctrl wrote it; delete it to regenerate)\n"
                ),
            };
            out += &line;
        }
        out
    }
}
