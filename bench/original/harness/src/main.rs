//! original_bench - the original Rust state store, measured the way
//! bench/bench_core.c measures ours (same operations, counts, keys, values,
//! block sizes and medians), and printed in bench_core's line format with
//! the same labels, so that bench/original.sh reads both alike.
//!
//!   durable put, one key and distinct keys   vs  write temp + fsync + rename + fsync dir
//!   compare-and-put cycle                    vs  the same two-fsync floor
//!   8 tasks putting distinct keys            vs  one task
//!   get                                      vs  open + read + close
//!   list of 100,000 keys                     vs  readdir of the same directory
//!   export of 100,000 keys (+ its JSON text) vs  readdir + open/read/close of every file
//!   memory store put / get                   (absolute: operations per second)
//!
//! Durable writes alternate with the floor in blocks (floor, store, floor,
//! store, ...) and report the median block; reads are measured warm.  The
//! store calls run on a current-thread tokio runtime (as the seed's
//! `#[tokio::test]`s do), the threaded puts on a multi-thread runtime with
//! one worker per writer (8).  Usage: original_bench DIR (on the normal
//! disk, never tmpfs).

use faucet_core::state::{FileStateStore, MemoryStateStore, StateStore, export_namespace};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const BIG_COUNT: usize = 100_000;
const BLOCKS: usize = 12;
const BLOCK_OPS: usize = 15;
const THREADS: usize = 8;

const PAYLOAD: &str = r#"{"cursor":"2026-11-29T12:00:00Z","offset":123456789,"page":42}"#;

fn die(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("original_bench: {what}: {e}");
    std::process::exit(1);
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| die("parse", e))
}

fn line(what: &str, value: f64, unit: &str, ratio: Option<(f64, &str)>) {
    print!("{what:<44} {value:>10.3} {unit:<5}");
    if let Some((r, against)) = ratio {
        print!("  {r:>5.2}x {against:<28}");
    }
    println!();
}

// ---- raw floors ----------------------------------------------------------

/// The two-fsync floor: write "{name}.{seq}.tmp", fsync it, rename it over
/// `name`, fsync the directory (bench.h's bench_durable_replace).
fn durable_replace(dir: &Path, dir_handle: &File, name: &str, seq: usize, data: &[u8]) {
    let tmp = dir.join(format!("{name}.{seq}.tmp"));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .unwrap_or_else(|e| die("floor write", e));
    f.write_all(data).unwrap_or_else(|e| die("floor write", e));
    f.sync_all().unwrap_or_else(|e| die("floor fsync", e));
    drop(f);
    fs::rename(&tmp, dir.join(name)).unwrap_or_else(|e| die("floor rename", e));
    dir_handle
        .sync_all()
        .unwrap_or_else(|e| die("floor dir fsync", e));
}

fn floor_read(path: &Path) {
    let mut buf = [0u8; 4096];
    let mut f = File::open(path).unwrap_or_else(|e| die("floor read", e));
    if f.read(&mut buf).unwrap_or_else(|e| die("floor read", e)) == 0 {
        die("floor read", "empty file");
    }
}

fn floor_readdir(dir: &Path, read_all: bool) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).unwrap_or_else(|e| die("opendir", e)) {
        let e = e.unwrap_or_else(|e| die("readdir", e));
        if e.file_name().as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        if read_all {
            floor_read(&e.path());
        }
        n += 1;
    }
    n
}

/// `count` state files the store can read (no fsync: they feed the reads).
fn populate(dir: &Path, count: usize) {
    fs::create_dir_all(dir).unwrap_or_else(|e| die("mkdir", e));
    for i in 0..count {
        fs::write(dir.join(format!("bench%3A%3Ak{i:07}.json")), PAYLOAD)
            .unwrap_or_else(|e| die("populate", e));
    }
}

// ---- durable writes, alternated with the floor ---------------------------

#[derive(Clone, Copy, PartialEq)]
enum WriteOp {
    PutOne,
    PutDistinct,
    Cas,
}

/// (median floor ms, median store ms, median block ratio).
async fn alternate(s: &FileStateStore, dir: &Path, op: WriteOp) -> (f64, f64, f64) {
    let dir_handle = File::open(dir).unwrap_or_else(|e| die("open bench dir", e));
    let (mut floors, mut stores, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut cur = json(PAYLOAD);
    let mut seq = 0;
    if op == WriteOp::Cas {
        cur = json(r#"{"start":true}"#);
        let _ = s.delete("bench::cas").await;
        if !s
            .compare_and_put("bench::cas", None, &cur)
            .await
            .unwrap_or_else(|e| die("cas seed", e))
        {
            die("cas seed", "not written");
        }
    }
    let floor_name = if op == WriteOp::PutDistinct {
        "floor-distinct"
    } else {
        "floor-one"
    };
    for b in 0..BLOCKS {
        let t0 = Instant::now();
        for _ in 0..BLOCK_OPS {
            durable_replace(dir, &dir_handle, floor_name, seq, PAYLOAD.as_bytes());
            seq += 1;
        }
        let t1 = Instant::now();
        for i in 0..BLOCK_OPS {
            match op {
                WriteOp::PutOne => s
                    .put("bench::one", &cur)
                    .await
                    .unwrap_or_else(|e| die("put", e)),
                WriteOp::PutDistinct => s
                    .put(&format!("bench::d{:04}", b * BLOCK_OPS + i), &cur)
                    .await
                    .unwrap_or_else(|e| die("put", e)),
                WriteOp::Cas => {
                    let next = json(&format!(
                        r#"{{"cursor":"c","offset":{}}}"#,
                        b * BLOCK_OPS + i
                    ));
                    let written = s
                        .compare_and_put("bench::cas", Some(&cur), &next)
                        .await
                        .unwrap_or_else(|e| die("compare-and-put", e));
                    if !written {
                        die("compare-and-put", "not written");
                    }
                    cur = next;
                }
            }
        }
        let t2 = Instant::now();
        let f = (t1 - t0).as_secs_f64() / BLOCK_OPS as f64 * 1e3;
        let st = (t2 - t1).as_secs_f64() / BLOCK_OPS as f64 * 1e3;
        floors.push(f);
        stores.push(st);
        ratios.push(st / f);
    }
    (
        median(&mut floors),
        median(&mut stores),
        median(&mut ratios),
    )
}

// ---- threads ---------------------------------------------------------------

/// Puts per second of `tasks` tasks putting `ops_each` distinct keys each.
fn threaded_puts(
    rt: &tokio::runtime::Runtime,
    s: &Arc<FileStateStore>,
    tasks: usize,
    ops_each: usize,
) -> f64 {
    let v = Arc::new(json(PAYLOAD));
    rt.block_on(async {
        let t0 = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let (s, v) = (Arc::clone(s), Arc::clone(&v));
                let id = i + tasks * 100;
                tokio::spawn(async move {
                    for n in 0..ops_each {
                        s.put(&format!("bench::t{id}::{n:05}"), &v)
                            .await
                            .unwrap_or_else(|e| die("thread put", e));
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap_or_else(|e| die("join", e));
        }
        (tasks * ops_each) as f64 / t0.elapsed().as_secs_f64()
    })
}

// ---- main ------------------------------------------------------------------

fn main() {
    let base = match std::env::args().nth(1) {
        Some(a) if !a.starts_with('-') => PathBuf::from(a),
        _ => {
            eprintln!("usage: original_bench DIR");
            std::process::exit(2);
        }
    };
    fs::create_dir_all(&base).unwrap_or_else(|e| die("mkdir", e));
    let wdir = base.join("writes");
    let big = base.join("big");
    let _ = fs::remove_dir_all(&wdir);
    let _ = fs::remove_dir_all(&big);
    fs::create_dir_all(&wdir).unwrap_or_else(|e| die("mkdir", e));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mrt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .enable_all()
        .build()
        .unwrap();

    println!(
        "original (Rust) state store benchmark, data under {}\n",
        base.display()
    );
    println!(
        "{:<44} {:>10} {:<5}  ratio to the floor measured in this run",
        "figure", "value", "unit"
    );

    // Durable writes.
    let s = Arc::new(FileStateStore::new(&wdir));
    let v = json(PAYLOAD);
    rt.block_on(async {
        s.put("bench::one", &v)
            .await
            .unwrap_or_else(|e| die("put", e)); // warm
        let ops = [
            ("file put, one key", WriteOp::PutOne),
            ("file put, distinct keys", WriteOp::PutDistinct),
            ("file compare-and-put cycle", WriteOp::Cas),
        ];
        for (i, (label, op)) in ops.into_iter().enumerate() {
            let (f, st, r) = alternate(&s, &wdir, op).await;
            if i == 0 {
                line("floor: temp+fsync+rename+fsync dir", f, "ms", None);
            }
            line(label, st, "ms", Some((r, "median block ratio")));
        }
    });

    // Threads: one task, then eight, same directory, distinct keys.
    let one = threaded_puts(&mrt, &s, 1, 160);
    let eight = threaded_puts(&mrt, &s, THREADS, 40);
    line("file put throughput, 1 thread", one, "op/s", None);
    line(
        "file put throughput, 8 threads",
        eight,
        "op/s",
        Some((eight / one, "vs one thread")),
    );
    drop(s);

    // Reads: 100,000 keys.
    populate(&big, BIG_COUNT);
    let s = FileStateStore::new(&big);
    rt.block_on(async {
        let reps = 20_000;
        for i in 0..1000 {
            let key = format!("bench::k{i:07}");
            if s.get(&key)
                .await
                .unwrap_or_else(|e| die("get", e))
                .is_none()
            {
                die("get", "missing");
            }
        }
        // The names are formatted inside the timed loops, as bench_core does.
        let t0 = Instant::now();
        for i in 0..reps {
            floor_read(&big.join(format!("bench%3A%3Ak{:07}.json", i % 1000)));
        }
        let floor_t = t0.elapsed().as_secs_f64() / reps as f64 * 1e6;
        let t0 = Instant::now();
        for i in 0..reps {
            if s.get(&format!("bench::k{:07}", i % 1000))
                .await
                .unwrap_or_else(|e| die("get", e))
                .is_none()
            {
                die("get", "missing");
            }
        }
        let store_t = t0.elapsed().as_secs_f64() / reps as f64 * 1e6;
        line("floor: open+read+close", floor_t, "us", None);
        line(
            "file get",
            store_t,
            "us",
            Some((store_t / floor_t, "vs open+read+close")),
        );

        let (mut best_floor, mut best_store) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let t0 = Instant::now();
            floor_readdir(&big, false);
            best_floor = best_floor.min(t0.elapsed().as_secs_f64());
            let t0 = Instant::now();
            let keys = s.list("").await.unwrap_or_else(|e| die("list big", e));
            best_store = best_store.min(t0.elapsed().as_secs_f64());
            if keys.len() != BIG_COUNT {
                die("list big", format!("{} keys", keys.len()));
            }
        }
        line(
            "floor: readdir of 100,000 files",
            best_floor * 1e3,
            "ms",
            None,
        );
        line(
            "file list, 100,000 keys",
            best_store * 1e3,
            "ms",
            Some((best_store / best_floor, "vs readdir")),
        );

        // The export and its JSON text, as bench_core times
        // faucet_export_namespace + faucet_export_to_json.
        let (mut best_floor, mut best_store) = (f64::MAX, f64::MAX);
        for _ in 0..2 {
            let t0 = Instant::now();
            floor_readdir(&big, true);
            best_floor = best_floor.min(t0.elapsed().as_secs_f64());
            let t0 = Instant::now();
            let exp = export_namespace(&s, "bench")
                .await
                .unwrap_or_else(|e| die("export", e));
            let doc = serde_json::to_string(&exp).unwrap_or_else(|e| die("export", e));
            best_store = best_store.min(t0.elapsed().as_secs_f64());
            if exp.keys.len() != BIG_COUNT || doc.is_empty() {
                die("export", format!("{} keys", exp.keys.len()));
            }
        }
        line(
            "floor: readdir + read of 100,000 files",
            best_floor * 1e3,
            "ms",
            None,
        );
        line(
            "file export, 100,000 keys",
            best_store * 1e3,
            "ms",
            Some((best_store / best_floor, "vs readdir + read all")),
        );
    });
    drop(s);

    // Memory store: operations per second on one thread.
    let mem = MemoryStateStore::new();
    rt.block_on(async {
        let n = 2_000_000;
        let keys: Vec<String> = (0..1000).map(|i| format!("bench::m{i:04}")).collect();
        let t0 = Instant::now();
        for i in 0..n {
            mem.put(&keys[i % 1000], &v)
                .await
                .unwrap_or_else(|e| die("memory put", e));
        }
        line(
            "memory put",
            n as f64 / t0.elapsed().as_secs_f64() / 1e6,
            "M/s",
            None,
        );
        let t0 = Instant::now();
        for i in 0..n {
            if mem
                .get(&keys[i % 1000])
                .await
                .unwrap_or_else(|e| die("memory get", e))
                .is_none()
            {
                die("memory get", "missing");
            }
        }
        line(
            "memory get",
            n as f64 / t0.elapsed().as_secs_f64() / 1e6,
            "M/s",
            None,
        );
    });

    let _ = fs::remove_dir_all(&wdir);
    let _ = fs::remove_dir_all(&big);
}
