//! importmap: resolves module specifiers (`./util`, `lodash/fp`,
//! `@scope/pkg/feature`, `@app/...` aliases) against a JSON package map, the
//! way a bundler or a JavaScript runtime resolves imports.
//!
//! It exists to be traced by sftrace: real work with real crates (serde_json
//! parses the map, regex matches specifiers and export patterns, rayon
//! resolves batches in parallel), with function names chosen so that the
//! filter `resolve|normalize|cache` selects the resolver's own logic and
//! leaves out parsing and pattern compilation. The functions a trace should
//! show are `#[inline(never)]`: an inlined function has no XRay sleds.

pub mod engine;
pub mod map;
pub mod memo;
pub mod paths;
pub mod workload;

pub use engine::{Request, ResolveError, Resolver};
pub use map::PackageMap;
