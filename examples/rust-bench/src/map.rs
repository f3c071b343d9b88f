//! The package map: which packages exist, where they live, what they export,
//! and which files exist. Read from JSON with serde.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageMap {
    /// Package name (`lodash`, `@scope/lib`) to package.
    pub packages: HashMap<String, Package>,
    /// Prefix aliases such as `"@app/*": "/src/app/*"`.
    #[serde(default)]
    pub aliases: HashMap<String, String>,
    /// Every file that exists (absolute, normalized paths).
    #[serde(default)]
    pub files: Vec<String>,
    /// Extensions tried, in order, when a path names no existing file.
    #[serde(default = "default_extensions")]
    pub extensions: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Package {
    /// Directory of the package (`/node_modules/lodash`).
    pub root: String,
    /// Entry point when the package is imported by its bare name.
    #[serde(default)]
    pub main: Option<String>,
    /// Subpath exports: `"./fp": "./fp/index.js"`, `"./utils/*": "./lib/utils/*.js"`.
    /// Exact keys win over patterns, longer patterns over shorter ones.
    #[serde(default)]
    pub exports: HashMap<String, String>,
}

fn default_extensions() -> Vec<String> {
    vec![".js".into(), ".ts".into(), ".json".into()]
}

impl PackageMap {
    #[inline(never)]
    pub fn from_json(text: &str) -> Result<PackageMap, serde_json::Error> {
        serde_json::from_str(text)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a package map always serializes")
    }
}
