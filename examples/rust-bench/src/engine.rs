//! The resolver: relative paths, aliases and bare package specifiers with
//! subpath exports, checked against the files of the package map, with a
//! shared cache. `resolve_batch` resolves many requests on rayon's pool.

use crate::map::PackageMap;
use crate::memo::Memo;
use crate::paths;
use rayon::prelude::*;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// One import: `specifier` as written in the file `from`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub from: String,
    pub specifier: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// Not a valid package name or path.
    Invalid(String),
    /// No package of that name in the map.
    UnknownPackage(String),
    /// The package exports nothing matching the subpath.
    NotExported { package: String, subpath: String },
    /// The target path names no file, with or without extensions.
    NoFile(String),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Invalid(s) => write!(f, "invalid specifier '{s}'"),
            ResolveError::UnknownPackage(p) => write!(f, "unknown package '{p}'"),
            ResolveError::NotExported { package, subpath } => {
                write!(f, "package '{package}' does not export '{subpath}'")
            }
            ResolveError::NoFile(p) => write!(f, "no file at '{p}'"),
        }
    }
}

/// A pattern (`./utils/*`, `@app/*`, or an exact key) and what it maps to;
/// the `*` of the target takes what the pattern's `*` matched.
struct Rule {
    pattern: Regex,
    target: String,
    /// Exact keys sort first, then patterns by the length of their prefix.
    precedence: (bool, std::cmp::Reverse<usize>),
}

impl Rule {
    fn compile(key: &str, target: &str) -> Rule {
        let (pattern, precedence) = match key.split_once('*') {
            Some((pre, post)) => (
                format!("^{}(.+){}$", regex::escape(pre), regex::escape(post)),
                (true, std::cmp::Reverse(pre.len())),
            ),
            None => (format!("^{}$", regex::escape(key)), (false, std::cmp::Reverse(key.len()))),
        };
        Rule { pattern: Regex::new(&pattern).expect("escaped patterns compile"), target: target.to_string(), precedence }
    }

    /// The rules of a table in the order they are tried.
    fn compile_all<'a>(table: impl Iterator<Item = (&'a String, &'a String)>) -> Vec<Rule> {
        let mut rules: Vec<Rule> = table.map(|(k, v)| Rule::compile(k, v)).collect();
        rules.sort_by_key(|r| r.precedence);
        rules
    }

    #[inline(never)]
    fn apply(&self, subject: &str) -> Option<String> {
        let caps = self.pattern.captures(subject)?;
        Some(match caps.get(1) {
            Some(star) => self.target.replacen('*', star.as_str(), 1),
            None => self.target.clone(),
        })
    }
}

pub struct Resolver {
    map: PackageMap,
    files: HashSet<String>,
    exports: HashMap<String, Vec<Rule>>,
    aliases: Vec<Rule>,
    bare: Regex,
    memo: Memo,
}

impl Resolver {
    /// Compiles the map's export and alias patterns.
    #[inline(never)]
    pub fn new(map: PackageMap) -> Resolver {
        let files = map.files.iter().cloned().collect();
        let exports = map
            .packages
            .iter()
            .map(|(name, pkg)| (name.clone(), Rule::compile_all(pkg.exports.iter())))
            .collect();
        let aliases = Rule::compile_all(map.aliases.iter());
        let bare = Regex::new(r"^((?:@[A-Za-z0-9._-]+/)?[A-Za-z0-9._-]+)(/.*)?$").expect("static regex");
        Resolver { map, files, exports, aliases, bare, memo: Memo::new(64) }
    }

    pub fn cache_len(&self) -> usize {
        self.memo.len()
    }

    /// Resolves many requests in parallel on rayon's global pool.
    #[inline(never)]
    pub fn resolve_batch(&self, requests: &[Request]) -> Vec<Result<String, ResolveError>> {
        requests.par_iter().map(|r| self.resolve(r)).collect()
    }

    /// Resolves one request, through the cache.
    #[inline(never)]
    pub fn resolve(&self, req: &Request) -> Result<String, ResolveError> {
        let dir = paths::dirname(&req.from);
        let key = Memo::key(dir, &req.specifier);
        if let Some(hit) = self.memo.cached(&key) {
            return hit;
        }
        let outcome = self.resolve_uncached(dir, &req.specifier);
        self.memo.cache_store(key, outcome.clone());
        outcome
    }

    #[inline(never)]
    fn resolve_uncached(&self, dir: &str, spec: &str) -> Result<String, ResolveError> {
        if spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/') {
            return self.resolve_relative(dir, spec);
        }
        if let Some(target) = self.aliases.iter().find_map(|rule| rule.apply(spec)) {
            return self.resolve_file(&paths::normalize(&target));
        }
        self.resolve_bare(spec)
    }

    #[inline(never)]
    fn resolve_relative(&self, dir: &str, spec: &str) -> Result<String, ResolveError> {
        self.resolve_file(&paths::normalize(&paths::join(dir, spec)))
    }

    #[inline(never)]
    fn resolve_bare(&self, spec: &str) -> Result<String, ResolveError> {
        let (name, subpath) = split_specifier(&self.bare, spec)?;
        let pkg = self.map.packages.get(name).ok_or_else(|| ResolveError::UnknownPackage(name.to_string()))?;
        let target = self.resolve_export(name, subpath, pkg.main.as_deref())?;
        self.resolve_file(&paths::normalize(&paths::join(&pkg.root, &target)))
    }

    /// The package-relative target of `subpath` (`.` or `./x/y`).
    #[inline(never)]
    fn resolve_export(&self, name: &str, subpath: String, main: Option<&str>) -> Result<String, ResolveError> {
        let rules = self.exports.get(name).map(Vec::as_slice).unwrap_or(&[]);
        if let Some(target) = rules.iter().find_map(|rule| rule.apply(&subpath)) {
            return Ok(target);
        }
        match main {
            Some(m) if subpath == "." => Ok(m.to_string()),
            // A package without an exports table exposes every file.
            _ if rules.is_empty() => Ok(subpath),
            _ => Err(ResolveError::NotExported { package: name.to_string(), subpath }),
        }
    }

    /// The existing file `path` names: itself, with an extension, or its
    /// directory's index file.
    #[inline(never)]
    fn resolve_file(&self, path: &str) -> Result<String, ResolveError> {
        if self.files.contains(path) {
            return Ok(path.to_string());
        }
        for ext in &self.map.extensions {
            let with_ext = format!("{path}{ext}");
            if self.files.contains(&with_ext) {
                return Ok(with_ext);
            }
        }
        for ext in &self.map.extensions {
            let index = format!("{path}/index{ext}");
            if self.files.contains(&index) {
                return Ok(index);
            }
        }
        Err(ResolveError::NoFile(path.to_string()))
    }
}

/// `@scope/pkg/a/b` -> (`@scope/pkg`, `./a/b`); `pkg` -> (`pkg`, `.`).
#[inline(never)]
fn split_specifier<'a>(bare: &Regex, spec: &'a str) -> Result<(&'a str, String), ResolveError> {
    let caps = bare.captures(spec).ok_or_else(|| ResolveError::Invalid(spec.to_string()))?;
    let name = caps.get(1).expect("group 1 always takes part").as_str();
    let subpath = caps.get(2).map_or_else(|| ".".to_string(), |m| format!(".{}", m.as_str()));
    Ok((name, subpath))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver() -> Resolver {
        let json = r#"{
            "packages": {
                "lodash": {"root": "/node_modules/lodash", "main": "./lodash.js",
                           "exports": {"./*": "./*", "./fp": "./fp/index.js", "./utils/*": "./lib/utils/*.js",
                                       "./utils/str": "./lib/utils/str.js"}},
                "@scope/lib": {"root": "/node_modules/@scope/lib", "main": "./index"},
                "tiny": {"root": "/node_modules/tiny", "exports": {".": "./main.js"}}
            },
            "aliases": {"@app/*": "/src/app/*"},
            "files": ["/node_modules/lodash/lodash.js", "/node_modules/lodash/fp/index.js",
                      "/node_modules/lodash/lib/utils/str.js", "/node_modules/lodash/lib/utils/other.js",
                      "/node_modules/lodash/README.md", "/node_modules/tiny/main.js", "/node_modules/@scope/lib/index.ts",
                      "/node_modules/@scope/lib/deep/x.json", "/src/app/util.ts", "/src/app/ui/index.js"]
        }"#;
        Resolver::new(PackageMap::from_json(json).unwrap())
    }

    fn req(from: &str, spec: &str) -> Request {
        Request { from: from.into(), specifier: spec.into() }
    }

    #[test]
    fn resolves_every_kind() {
        let r = resolver();
        let ok = |from: &str, spec: &str| r.resolve(&req(from, spec)).unwrap();
        assert_eq!(ok("/src/app/main.ts", "./util"), "/src/app/util.ts");
        assert_eq!(ok("/src/app/x/y.ts", "../ui"), "/src/app/ui/index.js");
        assert_eq!(ok("/src/main.ts", "@app/util"), "/src/app/util.ts");
        assert_eq!(ok("/src/main.ts", "lodash"), "/node_modules/lodash/lodash.js");
        assert_eq!(ok("/src/main.ts", "lodash/fp"), "/node_modules/lodash/fp/index.js");
        assert_eq!(ok("/src/main.ts", "lodash/utils/str"), "/node_modules/lodash/lib/utils/str.js");
        assert_eq!(ok("/src/main.ts", "lodash/utils/other"), "/node_modules/lodash/lib/utils/other.js");
        assert_eq!(ok("/src/main.ts", "lodash/README.md"), "/node_modules/lodash/README.md");
        assert_eq!(ok("/src/main.ts", "tiny"), "/node_modules/tiny/main.js");
        assert_eq!(ok("/src/main.ts", "@scope/lib"), "/node_modules/@scope/lib/index.ts");
        assert_eq!(ok("/src/main.ts", "@scope/lib/deep/x"), "/node_modules/@scope/lib/deep/x.json");
        let err = |spec: &str| r.resolve(&req("/src/main.ts", spec)).unwrap_err();
        assert_eq!(err("nope"), ResolveError::UnknownPackage("nope".into()));
        assert_eq!(err("lodash/private"), ResolveError::NoFile("/node_modules/lodash/private".into()));
        assert_eq!(err("@scope/lib/nothing"), ResolveError::NoFile("/node_modules/@scope/lib/nothing".into()));
        assert_eq!(err("tiny/private"), ResolveError::NotExported { package: "tiny".into(), subpath: "./private".into() });
        assert_eq!(err("./missing"), ResolveError::NoFile("/src/missing".into()));
        assert_eq!(err("%bad"), ResolveError::Invalid("%bad".into()));
    }

    #[test]
    fn batch_matches_serial_and_caches() {
        let r = resolver();
        let reqs: Vec<Request> = ["./util", "lodash/fp", "nope", "./util"].iter().map(|s| req("/src/app/a.ts", s)).collect();
        let par = r.resolve_batch(&reqs);
        let ser: Vec<_> = reqs.iter().map(|q| r.resolve(q)).collect();
        assert_eq!(par, ser);
        assert_eq!(r.cache_len(), 3);
    }
}
