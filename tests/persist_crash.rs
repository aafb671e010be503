//! A process killed in the middle of `save` leaves the previous file
//! loadable. The test runs this test binary again as a child that saves a
//! large filter over the file in a loop, kills it at several moments, and
//! loads what is there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use atomic_bloom::BloomFilter;

/// Set in the child's environment to the path it saves to.
const CHILD_PATH: &str = "ATOMIC_BLOOM_CRASH_CHILD_PATH";

/// Items of the file before the child runs; the child's filter has others.
const OLD_MARK: u64 = 1 << 61;
const NEW_MARK: u64 = 1 << 62;

/// A filter of about 32 MiB, so that a save takes long enough to be killed
/// midway.
fn big_filter(mark: u64) -> BloomFilter<u64> {
    let filter = BloomFilter::builder(25_000_000, 0.01)
        .seed(9)
        .build()
        .unwrap();
    filter.insert(&mark);
    for item in 0..100_000u64 {
        filter.insert(&(mark + 1 + item));
    }
    filter
}

/// The child: save over the file until killed.
#[test]
#[ignore = "run by killed_saves_leave_a_loadable_file as its child process"]
fn child_saves_forever() {
    let Some(path) = std::env::var_os(CHILD_PATH) else {
        return;
    };
    let filter = big_filter(NEW_MARK);
    println!("ready");
    loop {
        filter.save(&path).unwrap();
    }
}

/// Whether `filter` holds the items of the filter marked `mark` (a
/// thousand of them: no false positive makes it true by chance).
fn holds(filter: &BloomFilter<u64>, mark: u64) -> bool {
    (0..1_000u64).all(|item| filter.contains(&(mark + 1 + item)))
}

fn temporaries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .count()
}

#[test]
fn killed_saves_leave_a_loadable_file() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("atomic-bloom-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("visited.bin");
    let old = big_filter(OLD_MARK);
    let started = std::time::Instant::now();
    old.save(&path).unwrap();
    // Kill moments spread over a few saves' time on this machine.
    let save_ms = started.elapsed().as_secs_f64() * 1e3;

    let mut killed_mid_save = 0;
    let mut saw_new = false;
    for share in [0.2, 0.5, 0.8, 1.1, 1.5, 2.2, 3.3, 5.0] {
        let delay_ms = (save_ms * share).ceil() as u64;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_saves_forever",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_PATH, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the child has built its filter, then kill it `delay` later.
        let mut stdout = child.stdout.take().unwrap();
        let mut said = Vec::new();
        let mut byte = [0u8; 1];
        while !said.ends_with(b"ready") {
            let read = std::io::Read::read(&mut stdout, &mut byte).unwrap();
            assert_eq!(
                read,
                1,
                "the child ended: {}",
                String::from_utf8_lossy(&said)
            );
            said.push(byte[0]);
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        if temporaries(&dir) > 0 {
            killed_mid_save += 1;
        }
        let loaded = BloomFilter::<u64>::load(&path)
            .unwrap_or_else(|error| panic!("killed after {delay_ms} ms: {error}"));
        let old = holds(&loaded, OLD_MARK);
        let new = holds(&loaded, NEW_MARK);
        assert!(old != new, "the file is one whole save or the other");
        saw_new |= new;
        // Leftover temporaries are garbage: a crash cannot clean them.
        for entry in std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| entry.ok())
        {
            if entry.file_name().to_string_lossy().ends_with(".tmp") {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        killed_mid_save > 0,
        "no kill landed inside a save: the test proved nothing"
    );
    assert!(
        saw_new,
        "no save completed before a kill: the test proved nothing"
    );
}
