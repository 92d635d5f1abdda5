//! Extract the original sources from the seed files at build time, so that
//! they are never copied into this repository.
//!
//! A seed file starts with the directory and the file name of the source it
//! holds, each on a line of its own (`faucet_core/`, blank, `state.rs`,
//! blank), then the source.  The seed directory is `$FAUCET_SEEDS`, or
//! `shared/seeds` beside the repository (`<repo>/../shared/seeds`).

use std::fs;
use std::path::{Path, PathBuf};

const WANTED: [&str; 2] = ["state.rs", "state_key.rs"];

fn seeds_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FAUCET_SEEDS") {
        return PathBuf::from(dir);
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    // <repo>/bench/original/faucet_core -> <repo>/../shared/seeds
    manifest.join("../../../../shared/seeds")
}

/// (directory, file name, source) of one seed file, if it has the header.
fn parse_seed(text: &str) -> Option<(&str, &str, &str)> {
    let mut rest = text;
    let mut header = Vec::new();
    while header.len() < 2 {
        let (line, tail) = rest.split_once('\n')?;
        rest = tail;
        let line = line.trim();
        if !line.is_empty() {
            header.push(line);
        }
    }
    Some((header[0], header[1], rest.trim_start_matches(['\n', '\r'])))
}

fn main() {
    println!("cargo:rerun-if-env-changed=FAUCET_SEEDS");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = seeds_dir();
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "cannot read the seed directory {} ({e}); set FAUCET_SEEDS to the directory \
             holding the original sources",
            dir.display()
        )
    });
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("seed");
    fs::create_dir_all(&out).unwrap();
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("txt") {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let Some((crate_dir, name, source)) = parse_seed(&text) else {
            continue;
        };
        if crate_dir != "faucet_core/" || !WANTED.contains(&name) {
            continue;
        }
        if found.iter().any(|(n, _)| n == name) {
            panic!(
                "two seed files hold faucet_core/{name} (in {})",
                dir.display()
            );
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let dest = out.join(name);
        write_if_changed(&dest, source);
        found.push((name.to_string(), dest));
    }
    let mut modules = String::new();
    for name in WANTED {
        let Some((_, dest)) = found.iter().find(|(n, _)| n == name) else {
            panic!(
                "no seed file in {} holds faucet_core/{name}; set FAUCET_SEEDS",
                dir.display()
            );
        };
        let module = name.trim_end_matches(".rs");
        modules.push_str(&format!(
            "#[path = {:?}]\npub mod {module};\n",
            dest.display().to_string()
        ));
    }
    write_if_changed(&out.join("modules.rs"), &modules);
}

fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text).unwrap();
    }
}
