//! A deterministic, synthetic project for the benchmark: a package map of
//! `packages` packages (some scoped, a third with export tables) plus an
//! application tree, and import requests of every kind, some failing.

use crate::engine::Request;
use crate::map::{Package, PackageMap};
use std::collections::HashMap;

const APP_MODULES: usize = 40;
const APP_FILES: usize = 12;
const UTILS: usize = 8;
const FEATURES: usize = 4;

/// A small linear congruential generator: the same requests on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

pub fn package_name(i: usize) -> String {
    if i % 5 == 0 {
        format!("@scope{}/lib{}", i % 7, i)
    } else {
        format!("pkg{i}")
    }
}

pub fn package_map(packages: usize) -> PackageMap {
    let mut map = PackageMap {
        packages: HashMap::new(),
        aliases: HashMap::new(),
        files: Vec::new(),
        extensions: vec![".js".into(), ".ts".into(), ".json".into()],
    };
    for i in 0..packages {
        let name = package_name(i);
        let root = format!("/node_modules/{name}");
        let mut exports = HashMap::new();
        if i % 3 == 0 {
            exports.insert(".".to_string(), "./lib/index.js".to_string());
            exports.insert("./utils/*".to_string(), "./lib/utils/*.js".to_string());
            for k in 0..FEATURES {
                exports.insert(format!("./feature{k}"), format!("./lib/features/f{k}"));
            }
        }
        map.files.push(format!("{root}/lib/index.js"));
        map.files.push(format!("{root}/package.json"));
        // With exports, subpaths map into lib/; without, they are file paths.
        let (utils, features) = if exports.is_empty() { ("utils", "feature") } else { ("lib/utils", "lib/features/f") };
        for j in 0..UTILS {
            map.files.push(format!("{root}/{utils}/u{j}.js"));
        }
        for k in 0..FEATURES {
            map.files.push(format!("{root}/{features}{k}/index.js"));
        }
        map.packages.insert(name, Package { root, main: Some("./lib/index.js".into()), exports });
    }
    for a in 0..APP_MODULES {
        map.files.push(format!("/src/app/m{a}/index.ts"));
        for b in 0..APP_FILES {
            map.files.push(format!("/src/app/m{a}/f{b}.ts"));
        }
    }
    map.aliases.insert("@app/*".into(), "/src/app/*".into());
    map.aliases.insert("#shared/*".into(), "/src/app/m0/*".into());
    map
}

pub fn package_map_json(packages: usize) -> String {
    package_map(packages).to_json()
}

/// `count` requests from files of the application tree against a map of
/// `packages` packages; about one in eight fails to resolve.
pub fn requests(packages: usize, count: usize, seed: u64) -> Vec<Request> {
    let mut rng = Lcg(seed);
    (0..count)
        .map(|_| {
            let (a, b) = (rng.below(APP_MODULES), rng.below(APP_FILES));
            let (a2, b2) = (rng.below(APP_MODULES), rng.below(APP_FILES));
            let pkg = package_name(rng.below(packages));
            let specifier = match rng.below(8) {
                0 => format!("./f{b2}"),
                1 => format!("../m{a2}/f{b2}"),
                2 => format!("../m{a2}"),
                3 => format!("@app/m{a2}/f{b2}"),
                4 => pkg,
                5 => format!("{pkg}/utils/u{}", rng.below(UTILS)),
                6 => format!("{pkg}/feature{}", rng.below(FEATURES)),
                _ if b2 % 2 == 0 => format!("./missing{b2}"),
                _ => format!("not-installed{b2}"),
            };
            Request { from: format!("/src/app/m{a}/f{b}.ts"), specifier }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Resolver;

    #[test]
    fn most_requests_resolve() {
        let r = Resolver::new(PackageMap::from_json(&package_map_json(100)).unwrap());
        let reqs = requests(100, 2000, 7);
        let ok = r.resolve_batch(&reqs).iter().filter(|x| x.is_ok()).count();
        assert!(ok > 1500 && ok < 2000, "{ok} of 2000 resolved");
    }
}
