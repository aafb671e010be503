//! A synthetic web to crawl, generated page by page from a seed.
//!
//! Only std and external crates: `tests/crawl.rs` includes this file too.

use std::fmt::Write;

use url::Url;

/// At most this many sections per host: with home, about and contact, a
/// host's navigation bar has up to 19 links, on every one of its pages.
const MAX_SECTIONS: usize = 16;

/// The number of content links on a page follows a Pareto law: at least
/// `LINKS_MIN`, tail exponent `LINKS_ALPHA` (most pages have a few, about
/// one in a hundred has a hundred or more), capped at `LINKS_MAX`.
const LINKS_MIN: f64 = 3.0;
const LINKS_ALPHA: f64 = 1.2;
const LINKS_MAX: usize = 400;

/// The text of every page, between its navigation and its links.
const TEXT: &str = "<p>Workers pop a URL, fetch the page, push its links; the frontier \
                    drops the ones it has seen.</p>\n";

/// A web of `hosts` sites, `https://host{h}.example/`, whose pages are
/// generated when fetched, from a hash of (seed, host, page): nothing is
/// stored, and the same seed gives the same web.
///
/// Each host has a home page `/`, `/about.html`, `/contact.html`, up to 16
/// section indexes `/section{s}/`, and `pages_per_host` articles
/// `/section{s}/page{p}.html`. Every page carries the host's navigation
/// (home, sections, about, contact: the same links on every page, as on
/// real sites), a stylesheet link, a footer, and a Pareto-distributed
/// number of content links, most to the same host and some to others,
/// written in every form a crawler meets: `page7.html`, `./page2.html`,
/// `../section3/page9.html`, `/section1/page4.html`,
/// `https://host5.example/section0/page1.html`, `//host5.example/`, some
/// with a `#fragment`, some `mailto:` or `javascript:`, a few broken
/// (`/section{s}/draft.html`, a 404).
///
/// Every page is reachable from [`start_urls`](Self::start_urls): section
/// indexes list all their articles, and each home page links to the next
/// host's home page.
#[derive(Debug, Clone)]
pub struct SyntheticWeb {
    seed: u64,
    hosts: usize,
    pages_per_host: usize,
    sections: usize,
    pages_per_section: usize,
}

/// A page of a host. Its index within the host is `Home` 0, `About` 1,
/// `Contact` 2, then the sections, then the articles.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Page {
    Home,
    About,
    Contact,
    Section(usize),
    Article(usize),
}

/// How a link is written.
#[derive(Clone, Copy)]
enum Form {
    Relative,
    AbsolutePath,
    AbsoluteUrl,
}

impl SyntheticWeb {
    /// A web of `hosts` hosts with `pages_per_host` articles each, from `seed`.
    pub fn new(seed: u64, hosts: usize, pages_per_host: usize) -> Self {
        let wanted = pages_per_host.clamp(1, MAX_SECTIONS);
        let pages_per_section = pages_per_host.div_ceil(wanted).max(1);
        let sections = pages_per_host.div_ceil(pages_per_section).max(1);
        SyntheticWeb {
            seed,
            hosts,
            pages_per_host,
            sections,
            pages_per_section,
        }
    }

    /// Where a crawl starts: the home page of host 0 (the others are
    /// reachable from it).
    pub fn start_urls(&self) -> Vec<String> {
        if self.hosts == 0 {
            return Vec::new();
        }
        vec![self.url(0, Page::Home)]
    }

    /// Pages in the web, all reachable from the start: articles, plus home,
    /// about, contact and the section indexes of every host.
    pub fn page_count(&self) -> usize {
        self.hosts * (3 + self.sections + self.pages_per_host)
    }

    /// The HTML of the page at `url`, or `None` (a 404) when no page of
    /// the web has that URL. Each page has one URL: no query, no
    /// `index.html` alias, no leading zeros.
    pub fn fetch(&self, url: &Url) -> Option<String> {
        let (host, page) = self.parse(url)?;
        Some(self.render(host, page))
    }

    fn parse(&self, url: &Url) -> Option<(usize, Page)> {
        if url.scheme() != "https"
            || url.port().is_some()
            || url.query().is_some()
            || !url.username().is_empty()
        {
            return None;
        }
        let host = number(
            url.host_str()?
                .strip_prefix("host")?
                .strip_suffix(".example")?,
        )?;
        let page = match url.path() {
            "/" => Page::Home,
            "/about.html" => Page::About,
            "/contact.html" => Page::Contact,
            path => {
                let (section, rest) = path.strip_prefix("/section")?.split_once('/')?;
                let section = number(section)?;
                if rest.is_empty() {
                    Page::Section(section)
                } else {
                    let article = number(rest.strip_prefix("page")?.strip_suffix(".html")?)?;
                    (self.section_of(article) == section).then_some(Page::Article(article))?
                }
            }
        };
        let exists = match page {
            Page::Section(s) => s < self.sections,
            Page::Article(p) => p < self.pages_per_host,
            _ => true,
        };
        (host < self.hosts && exists).then_some((host, page))
    }

    fn section_of(&self, article: usize) -> usize {
        article / self.pages_per_section
    }

    fn index_of(&self, page: Page) -> usize {
        match page {
            Page::Home => 0,
            Page::About => 1,
            Page::Contact => 2,
            Page::Section(s) => 3 + s,
            Page::Article(p) => 3 + self.sections + p,
        }
    }

    fn path(&self, page: Page) -> String {
        match page {
            Page::Home => "/".to_string(),
            Page::About => "/about.html".to_string(),
            Page::Contact => "/contact.html".to_string(),
            Page::Section(s) => format!("/section{s}/"),
            Page::Article(p) => format!("/section{}/page{p}.html", self.section_of(p)),
        }
    }

    fn url(&self, host: usize, page: Page) -> String {
        format!("https://host{host}.example{}", self.path(page))
    }

    /// `target` on `host`, as a link written on page `from` of `host`.
    fn link(&self, host: usize, from: Page, target: Page, form: Form, rng: &mut Rng) -> String {
        match form {
            Form::AbsoluteUrl => self.url(host, target),
            Form::AbsolutePath => self.path(target),
            Form::Relative => {
                let path = self.path(target);
                let from_section = match from {
                    Page::Section(s) => Some(s),
                    Page::Article(p) => Some(self.section_of(p)),
                    _ => None,
                };
                let Some(s) = from_section else {
                    return format!(".{path}"); // from the root directory
                };
                match path.strip_prefix(&format!("/section{s}/")) {
                    Some(rest) if rng.below(4) == 0 || rest.is_empty() => format!("./{rest}"),
                    Some(rest) => rest.to_string(),
                    None => format!("..{path}"),
                }
            }
        }
    }

    /// A content link: mostly an article of the same host, near the page or
    /// among the host's popular (low-numbered) ones; sometimes another
    /// host's page; now and then a fragment, a `mailto:`, a `javascript:`
    /// or a broken link.
    fn content_link(&self, host: usize, from: Page, rng: &mut Rng) -> String {
        let roll = rng.below(1000);
        if roll < 10 {
            return format!("mailto:editor@host{host}.example");
        }
        if roll < 15 {
            return "javascript:void(0)".to_string();
        }
        if roll < 20 {
            return format!("/section{}/draft.html", rng.below(self.sections));
        }
        let popular = |rng: &mut Rng| {
            let skew = rng.unit().powi(3);
            Page::Article(
                ((skew * self.pages_per_host as f64) as usize).min(self.pages_per_host - 1),
            )
        };
        let mut link = if self.pages_per_host == 0 {
            self.path(Page::About)
        } else if roll < 150 && self.hosts > 1 {
            let other = rng.below(self.hosts);
            let target = if rng.below(5) == 0 {
                Page::Home
            } else {
                popular(rng)
            };
            let url = self.url(other, target);
            match rng.below(8) {
                0 => url["https:".len()..].to_string(), // scheme-relative
                _ => url,
            }
        } else {
            let target = match from {
                Page::Article(p) if rng.below(2) == 0 => {
                    let first = self.section_of(p) * self.pages_per_section;
                    let last = (first + self.pages_per_section).min(self.pages_per_host);
                    Page::Article(first + rng.below(last - first))
                }
                _ => popular(rng),
            };
            let form = [Form::Relative, Form::AbsolutePath, Form::AbsoluteUrl][rng.below(3)];
            self.link(host, from, target, form, rng)
        };
        if rng.below(30) == 0 {
            let _ = write!(link, "#part{}", rng.below(5));
        }
        link
    }

    fn render(&self, host: usize, page: Page) -> String {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&(host as u64).to_le_bytes());
        key[8..].copy_from_slice(&(self.index_of(page) as u64).to_le_bytes());
        let mut rng = Rng(wyhash::wyhash(&key, self.seed));
        // The host's navigation is written the same way on all its pages.
        let nav_form = [Form::AbsolutePath, Form::AbsoluteUrl, Form::Relative][host % 3];

        let mut html = String::with_capacity(4096);
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html><head><title>host{host}: {}</title>\n\
             <link rel=\"stylesheet\" href=\"/style.css\"></head>\n<body><nav>\n",
            self.path(page)
        );
        let mut nav = vec![Page::Home];
        nav.extend((0..self.sections).map(Page::Section));
        nav.extend([Page::About, Page::Contact]);
        for target in nav {
            let href = self.link(host, page, target, nav_form, &mut rng);
            let _ = writeln!(html, "<a href=\"{href}\">{}</a>", self.path(target));
        }
        html.push_str("</nav>\n<main>\n");
        html.push_str(TEXT);
        if let Page::Section(s) = page {
            let first = s * self.pages_per_section;
            for p in first..(first + self.pages_per_section).min(self.pages_per_host) {
                let _ = writeln!(html, "<li><a href=\"page{p}.html\">Article {p}</a></li>");
            }
        }
        let pareto = LINKS_MIN / rng.unit().powf(1.0 / LINKS_ALPHA);
        for i in 0..(pareto as usize).min(LINKS_MAX) {
            let href = self.content_link(host, page, &mut rng);
            let _ = match i % 8 {
                0 => writeln!(html, "<p>See <a class='ref' href='{href}'>this</a>.</p>"),
                1 => writeln!(html, "<p><A HREF=\"{href}\">more</A></p>"),
                _ => writeln!(
                    html,
                    "<p><a href=\"{href}\" title=\"link {i}\">link</a></p>"
                ),
            };
        }
        let next = (host + 1) % self.hosts.max(1);
        let _ = write!(
            html,
            "</main>\n<footer><a href=\"/\">Home</a> <a href=\"/about.html#team\">About us</a>\n\
             <a href=\"mailto:webmaster@host{host}.example\">Write to us</a>\n\
             <a href=\"https://host{next}.example/\">Next site in the ring</a></footer>\n\
             </body></html>\n"
        );
        html
    }
}

/// A decimal number with no sign and no leading zero: one spelling each.
fn number(text: &str) -> Option<usize> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// splitmix64: a small, fast, deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}
