//! Criterion benchmarks of the importmap resolver:
//!   parse_package_map  serde_json reads the package map;
//!   resolve_cold       a cold start: parse the map, compile its export and
//!                      alias patterns (regex), resolve a batch (rayon);
//!   resolve_warm       the same batch again, answered from the cache.
//!
//! The project's size comes from IMPORTMAP_PACKAGES (default 300 packages)
//! and IMPORTMAP_REQUESTS (default 4000 imports per batch), so a test can
//! record the same binary on a smaller input.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use importmap::{workload, PackageMap, Request, Resolver};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn project() -> (String, Vec<Request>) {
    let packages = size("IMPORTMAP_PACKAGES", 300);
    let requests = workload::requests(packages, size("IMPORTMAP_REQUESTS", 4000), 42);
    (workload::package_map_json(packages), requests)
}

fn parse_package_map(c: &mut Criterion) {
    let (json, _) = project();
    c.bench_function("parse_package_map", |b| b.iter(|| PackageMap::from_json(black_box(&json)).unwrap()));
}

fn resolve_cold(c: &mut Criterion) {
    let (json, requests) = project();
    c.bench_function("resolve_cold", |b| {
        b.iter(|| {
            let resolver = Resolver::new(PackageMap::from_json(black_box(&json)).unwrap());
            resolver.resolve_batch(&requests)
        })
    });
}

fn resolve_warm(c: &mut Criterion) {
    let (json, requests) = project();
    let resolver = Resolver::new(PackageMap::from_json(&json).unwrap());
    resolver.resolve_batch(&requests);
    c.bench_function("resolve_warm", |b| b.iter(|| resolver.resolve_batch(black_box(&requests))));
}

criterion_group!(benches, parse_package_map, resolve_cold, resolve_warm);
criterion_main!(benches);
