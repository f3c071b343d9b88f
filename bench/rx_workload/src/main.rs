//! A workload shaped like `cargo test` on a regex-style crate, for
//! bench/rx_workload.py: TESTS short tests, each in its own named thread,
//! one per CPU at a time (as libtest runs them), each running inside
//! `catch_unwind`. A test compiles a few
//! patterns with the regex crate and matches them over SIZE generated lines.
//! Every 50th test is a `#[should_panic]`-style test (it unwraps an invalid
//! pattern) and every 100th spawns a helper thread that panics and is
//! joined. The output is one line, the same on every run: counts and a
//! checksum of every match.
//!
//!     rx_workload [TESTS [SIZE]]      (default 300 tests, 4 lines each)

use regex::{Regex, RegexBuilder, RegexSet};
use std::panic;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// Patterns in the spirit of the regex crate's own tests: literals,
/// classes, Unicode, alternations, repetitions, anchors and captures.
const PATTERNS: &[&str] = &[
    r"\b\w+ing\b",
    r"(?P<user>[a-z]+)@(?P<host>[a-z]+)\.(?:com|org|net)",
    r"\d{4}-\d{2}-\d{2}",
    r"(foo|bar|baz|quux)+",
    r"^[A-Z][a-z]+",
    r"\p{Greek}+",
    r"(\d+)\.(\d+)\.(\d+)",
    r"[aeiou]{2,}",
    r"(?i)hello\s+world",
    r"x*y+z?",
    r"(a|b)*abb",
    r"[[:punct:]]+$",
    r"\$\{([a-z_]+)\}",
    r"(?m)^\s*#.*$",
    r"[^\x00-\x7F]+",
    r"(\w+)\s+\1",
];

const WORDS: &[&str] = &[
    "testing", "hello", "world", "foo", "bar", "baz", "quux", "2024-05-17", "user@example.com",
    "root@host.org", "1.2.3", "10.20.30", "αβγ", "Δέλτα", "aaiioo", "xyyz", "ababb", "${home}",
    "# comment", "Capital", "running", "naïve", "the the", "end.", "!?", "résumé", "Hello  World",
];

/// A small deterministic generator, so every run matches the same text.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
}

/// One 64-byte-aligned block of a line. memchr's vector loops take a
/// number of steps that depends on where a haystack starts in memory, so
/// lines at heap addresses (which differ from run to run) would make the
/// calls a log records differ too; aligned lines make every run call the
/// same functions the same number of times.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Block([u8; 64]);

struct Line {
    blocks: Vec<Block>,
    len: usize,
}

impl Line {
    fn new(s: &str) -> Line {
        let mut blocks = vec![Block([0; 64]); (s.len() + 63) / 64];
        for (b, chunk) in blocks.iter_mut().zip(s.as_bytes().chunks(64)) {
            b.0[..chunk.len()].copy_from_slice(chunk);
        }
        Line { blocks, len: s.len() }
    }

    fn as_str(&self) -> &str {
        // SAFETY: the blocks are plain bytes, at least len of them.
        let bytes = unsafe { std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.len) };
        std::str::from_utf8(bytes).expect("a line is UTF-8")
    }
}

fn haystack(seed: u64, lines: usize) -> Vec<Line> {
    let mut rng = Lcg(seed);
    (0..lines)
        .map(|_| {
            let n = 3 + rng.next() % 8;
            Line::new(&(0..n).map(|_| WORDS[rng.next() % WORDS.len()]).collect::<Vec<_>>().join(" "))
        })
        .collect()
}

fn mix(sum: u64, v: u64) -> u64 {
    (sum ^ v).wrapping_mul(0x100000001b3)
}

/// One ordinary test: three patterns, matched three ways, plus a RegexSet
/// or a replacement on some tests.
fn regex_test(id: usize, size: usize) -> u64 {
    let owned = haystack(id as u64, size);
    let lines: Vec<&str> = owned.iter().map(Line::as_str).collect();
    let mut sum = id as u64;
    for k in 0..3 {
        let pat = PATTERNS[(id * 3 + k) % PATTERNS.len()];
        let re = RegexBuilder::new(pat).case_insensitive(id % 4 == 0).build();
        let re = match re {
            Ok(re) => re,
            // Backreferences (\1) are unsupported: an expected error.
            Err(_) => {
                sum = mix(sum, 7);
                continue;
            }
        };
        for line in &lines {
            sum = mix(sum, re.is_match(line) as u64);
            for m in re.find_iter(line) {
                sum = mix(sum, (m.start() * 31 + m.end()) as u64);
            }
            if re.captures_len() > 1 {
                for caps in re.captures_iter(line) {
                    sum = mix(sum, caps.iter().flatten().map(|m| (m.end() - m.start()) as u64).sum());
                }
            }
        }
    }
    if id % 5 == 0 {
        let set = RegexSet::new(&PATTERNS[..8]).expect("valid set");
        for line in &lines {
            sum = mix(sum, set.matches(line).iter().map(|i| 1u64 << i).sum());
        }
    }
    if id % 7 == 0 {
        let re = Regex::new(r"(?P<w>[a-z]+)(\d*)").expect("valid pattern");
        for line in &lines {
            sum = mix(sum, re.replace_all(line, "<$w>").len() as u64);
        }
    }
    sum
}

/// What a test does, by its number.
fn run_test(id: usize, size: usize) -> u64 {
    if id % 50 == 25 {
        // A #[should_panic] test: unwraps a pattern that does not parse.
        let re = Regex::new(&format!("(unclosed{}", id)).unwrap();
        return re.as_str().len() as u64;
    }
    if id % 100 == 60 {
        // A test whose helper thread panics, joined and checked.
        let h = thread::Builder::new()
            .name(format!("helper_{:03}", id))
            .spawn(move || {
                let re = Regex::new(r"^\d+$").expect("valid pattern");
                if !re.is_match("not a number") {
                    panic!("helper {} found no number", id);
                }
            })
            .expect("spawn helper");
        assert!(h.join().is_err(), "helper thread should have panicked");
        return mix(id as u64, 60);
    }
    regex_test(id, size)
}

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn main() {
    let mut args = std::env::args().skip(1);
    let tests: usize = args.next().map_or(300, |s| s.parse().expect("TESTS: a number"));
    let size: usize = args.next().map_or(4, |s| s.parse().expect("SIZE: a number"));
    // libtest captures a test's panic message; count them instead.
    panic::set_hook(Box::new(|_| {
        PANICS.fetch_add(1, Ordering::Relaxed);
    }));
    // Batches of one test thread per CPU, each joined before the next batch
    // starts: libtest's concurrency, without its channel, whose waits would
    // make the calls recorded depend on timing.
    let concurrency = thread::available_parallelism().map_or(2, |n| n.get());
    let mut results = Vec::with_capacity(tests);
    for first in (0..tests).step_by(concurrency) {
        let batch: Vec<_> = (first..tests.min(first + concurrency))
            .map(|id| {
                thread::Builder::new()
                    .name(format!("test_{:03}", id))
                    .spawn(move || panic::catch_unwind(|| run_test(id, size)).ok())
                    .expect("spawn test thread")
            })
            .collect();
        results.extend(batch.into_iter().map(|h| h.join().expect("test thread")));
    }
    let (mut passed, mut panicked, mut sum) = (0, 0, 0u64);
    for (id, r) in results.into_iter().enumerate() {
        match r {
            Some(v) => {
                passed += 1;
                sum = mix(sum, v);
            }
            None => {
                panicked += 1;
                sum = mix(sum, id as u64);
            }
        }
    }
    println!(
        "tests {} passed {} panicked {} panic-hook calls {} checksum {:016x}",
        tests,
        passed,
        panicked,
        PANICS.load(Ordering::Relaxed),
        sum
    );
}
