//! Criterion benchmarks of the importmap resolver: parsing the package map
//! (serde_json), resolving a batch with a cold cache (regex compilation,
//! path normalization, rayon), and with a warm cache.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use importmap::{workload, PackageMap, Resolver};

const PACKAGES: usize = 300;
const REQUESTS: usize = 4000;

fn parse_package_map(c: &mut Criterion) {
    let json = workload::package_map_json(PACKAGES);
    c.bench_function("parse_package_map", |b| b.iter(|| PackageMap::from_json(black_box(&json)).unwrap()));
}

fn resolve_cold(c: &mut Criterion) {
    let map = workload::package_map(PACKAGES);
    let requests = workload::requests(PACKAGES, REQUESTS, 42);
    c.bench_function("resolve_cold", |b| {
        b.iter(|| Resolver::new(black_box(map.clone())).resolve_batch(&requests))
    });
}

fn resolve_warm(c: &mut Criterion) {
    let resolver = Resolver::new(workload::package_map(PACKAGES));
    let requests = workload::requests(PACKAGES, REQUESTS, 42);
    resolver.resolve_batch(&requests);
    c.bench_function("resolve_warm", |b| b.iter(|| resolver.resolve_batch(black_box(&requests))));
}

criterion_group!(benches, parse_package_map, resolve_cold, resolve_warm);
criterion_main!(benches);
