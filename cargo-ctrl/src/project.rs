//! The project's state, kept in `.ctrl/project.json` (kubebuilder's `PROJECT` file):
//! its name and domain, how it depends on ctrl, the APIs and webhooks created so far,
//! and the hash of every file cargo ctrl wrote (so that a file the user changed is
//! never overwritten: [`crate::files`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Where the state lives, under the project root.
pub const STATE_FILE: &str = ".ctrl/project.json";

/// One API (`create api`) and its webhooks (`create webhook`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Api {
    /// The group's first label (`cache`); the API group is `<group>.<domain>`.
    pub group: String,
    /// The version (`v1alpha1`).
    pub version: String,
    /// The kind (`Memcached`).
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// `--image`: the deploy-image reconciler runs this image.
    pub image: Option<String>,
    /// `--port`: the container port of that image.
    pub port: Option<u16>,
    /// `create webhook --defaulting`.
    #[serde(default)]
    pub defaulting: bool,
    /// `create webhook --validation`.
    #[serde(default)]
    pub validation: bool,
    /// `create webhook --conversion`: this version is the hub.
    #[serde(default)]
    pub conversion: bool,
}

impl Api {
    /// The kind in lower case (`memcached`): its module's name.
    pub fn module(&self) -> String {
        self.kind.to_lowercase()
    }

    /// Whether any webhook is set.
    pub fn webhooks(&self) -> bool {
        self.defaulting || self.validation || self.conversion
    }
}

/// The project.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Project {
    /// The operator's name (`memcached-operator`): package, binary, `<name>-system`.
    pub name: String,
    /// The domain of its API groups (`example.com`).
    pub domain: String,
    /// `--ctrl-path`: a ctrl checkout to depend on by path (else by version).
    pub ctrl_path: Option<String>,
    /// The APIs, in creation order.
    #[serde(default)]
    pub apis: Vec<Api>,
    /// `path -> hash` of each file as cargo ctrl last wrote it.
    #[serde(default)]
    pub generated: BTreeMap<String, String>,
}

impl Project {
    /// The crate name (`memcached_operator`).
    pub fn crate_name(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Reads the state of the project at `root`.
    pub fn load(root: &Path) -> Result<Self, String> {
        let path = root.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (run `cargo ctrl init` first, in the project's root)",
                path.display()
            )
        })?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes the state of the project at `root`.
    pub fn save(&self, root: &Path) -> Result<(), String> {
        let path = root.join(STATE_FILE);
        let dir = path.parent().ok_or("no parent")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The API `group`/`version`/`kind`, if created.
    pub fn api_mut(&mut self, group: &str, version: &str, kind: &str) -> Option<&mut Api> {
        self.apis
            .iter_mut()
            .find(|a| a.group == group && a.version == version && a.kind == kind)
    }

    /// The distinct versions of the APIs, in creation order.
    pub fn versions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in &self.apis {
            if !out.contains(&a.version) {
                out.push(a.version.clone());
            }
        }
        out
    }
}
