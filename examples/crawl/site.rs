//! Where the crawler's pages come from: the synthetic web, or a directory
//! of HTML files on disk crawled through `file://` URLs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use indicatif::HumanCount;
use url::Url;

use crate::web::SyntheticWeb;

/// The crawl examples' options for where pages come from, and how many
/// URLs to size for.
#[derive(clap::Args, Debug)]
pub struct SiteArgs {
    /// Hosts in the synthetic web.
    #[arg(long, default_value_t = 1500)]
    pub hosts: usize,
    /// Articles per host in the synthetic web (each host also has a home,
    /// about and contact page and up to 16 section indexes).
    #[arg(long, default_value_t = 500)]
    pub pages_per_host: usize,
    /// Seed of the synthetic web (and of the library crawl's filter).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Distinct URLs to size for [default: 1.25 x the pages of the web, or
    /// of the files under --dir].
    #[arg(long)]
    pub capacity: Option<usize>,
    /// Crawl this directory of HTML files instead, from its index.html.
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

impl SiteArgs {
    /// The site these name (the directory if there is one, or else the
    /// synthetic web), a line that describes it, and the capacity asked
    /// for (or else the site's size and a quarter more, and 100 more for a
    /// tiny site).
    pub fn open(&self) -> Result<(Site, String, usize), String> {
        let (site, what) = match &self.dir {
            Some(dir) => Site::dir(dir)?,
            None => Site::synthetic(self.seed, self.hosts, self.pages_per_host)?,
        };
        let capacity = (self.capacity).unwrap_or(site.size().saturating_mul(5) / 4 + 100);
        Ok((site, what, capacity))
    }
}

/// Where pages come from.
pub enum Site {
    Synthetic(SyntheticWeb),
    Dir(DirSite),
}

impl Site {
    /// The synthetic web of `hosts` hosts with `pages_per_host` articles,
    /// and a line that describes it.
    pub fn synthetic(
        seed: u64,
        hosts: usize,
        pages_per_host: usize,
    ) -> Result<(Site, String), String> {
        if hosts == 0 || pages_per_host == 0 {
            return Err("--hosts and --pages-per-host must be at least 1".into());
        }
        let web = SyntheticWeb::new(seed, hosts, pages_per_host);
        let what = format!(
            "a synthetic web of {hosts} hosts x {pages_per_host} articles, {} pages (seed {seed})",
            HumanCount(web.page_count() as u64),
        );
        Ok((Site::Synthetic(web), what))
    }

    /// The directory `path`, and a line that describes it.
    pub fn dir(path: &Path) -> Result<(Site, String), String> {
        let dir = DirSite::open(path).map_err(|e| {
            format!(
                "{e}\npass a directory of HTML files, \
                 e.g. --dir \"$(rustc --print sysroot)/share/doc/rust/html\""
            )
        })?;
        let what = format!(
            "{} ({} files)",
            path.display(),
            HumanCount(dir.files as u64)
        );
        Ok((Site::Dir(dir), what))
    }

    /// Where the crawl starts.
    pub fn start_urls(&self) -> Vec<String> {
        match self {
            Site::Synthetic(web) => web.start_urls(),
            Site::Dir(dir) => dir.start_urls.clone(),
        }
    }

    /// Pages in the web, or files in the directory: what to size the
    /// frontier for.
    pub fn size(&self) -> usize {
        match self {
            Site::Synthetic(web) => web.page_count(),
            Site::Dir(dir) => dir.files,
        }
    }

    /// The page at `url`, or `None` when there is none.
    pub fn fetch(&self, url: &Url) -> Option<String> {
        match self {
            Site::Synthetic(web) => web.fetch(url),
            Site::Dir(dir) => dir.fetch(url),
        }
    }
}

/// Files larger than this are skipped, not read.
const MAX_FILE_BYTES: u64 = 32 << 20;

/// A directory of HTML files, e.g. the Rust documentation at
/// `$(rustc --print sysroot)/share/doc/rust/html`.
#[derive(Debug)]
pub struct DirSite {
    /// The directory, canonical: every fetched file must be under it.
    root: PathBuf,
    /// Its index.html, or its top-level HTML files.
    start_urls: Vec<String>,
    /// Files under it, at any depth.
    files: usize,
}

impl DirSite {
    /// Opens `dir`: the crawl starts at its `index.html`, or at every
    /// top-level `.html` file when it has none.
    fn open(dir: &Path) -> Result<Self, String> {
        let root = dir
            .canonicalize()
            .map_err(|e| format!("cannot open --dir {}: {e}", dir.display()))?;
        if !root.is_dir() {
            return Err(format!("--dir {} is not a directory", dir.display()));
        }
        let url_of = |path: &Path| {
            Url::from_file_path(path)
                .map(String::from)
                .map_err(|()| format!("{} cannot be written as a file:// URL", path.display()))
        };
        let top = read_dir(&root)?;
        let index = root.join("index.html");
        let start_urls = if index.is_file() {
            vec![url_of(&index)?]
        } else {
            let mut pages = Vec::new();
            for entry in top {
                let path = entry.path();
                if path.is_file() && is_html(&path) {
                    pages.push(url_of(&path)?);
                }
            }
            pages.sort();
            pages
        };
        if start_urls.is_empty() {
            return Err(format!(
                "--dir {} has no index.html and no .html file at its top level",
                root.display()
            ));
        }
        Ok(DirSite {
            files: count_files(&root),
            root,
            start_urls,
        })
    }

    /// The text of the file at `url` when it is a `file://` URL of an
    /// `.html` or `.htm` file under the directory, at most 32 MiB; `None`
    /// for anything else (another scheme, outside the directory, not HTML,
    /// missing, too large). The query, if any, is ignored.
    fn fetch(&self, url: &Url) -> Option<String> {
        if url.scheme() != "file" {
            return None;
        }
        let path = url.to_file_path().ok()?;
        if !is_html(&path) {
            return None;
        }
        // Canonical: a symbolic link cannot lead out of the directory.
        let path = path.canonicalize().ok()?;
        if !path.starts_with(&self.root) || fs::metadata(&path).ok()?.len() > MAX_FILE_BYTES {
            return None;
        }
        let bytes = fs::read(&path).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn is_html(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, String> {
    let entries = fs::read_dir(dir).and_then(|it| it.collect::<io::Result<Vec<_>>>());
    entries.map_err(|e| format!("cannot read directory {}: {e}", dir.display()))
}

/// Regular files under `root`, not following symbolic links; unreadable
/// subdirectories are skipped.
fn count_files(root: &Path) -> usize {
    let mut files = 0;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => dirs.push(entry.path()),
                Ok(kind) if kind.is_file() => files += 1,
                _ => {}
            }
        }
    }
    files
}
