//! Entry points for the fuzz targets in `fuzz/` (not the module's
//! interface: the server knows only the commands). Each parses foreign
//! bytes as the server would take them, and then uses what it accepted:
//! adds items (growth included, within a byte cap so that a hostile size
//! is refused rather than allocated), asks for them back, and dumps and
//! reloads it, checking what a user relies on. A panic here is a server's
//! death there.

use crate::cuckoo::config::Bounds;
use crate::cuckoo::{Cuckoo, Growth, Insert, Lookup, Scanned};
use crate::dump::{self, DumpState};
use crate::filter::{Added, Bloom};
use crate::redisbloom::rdb::{self, BytesInput, BytesOutput};
use crate::redisbloom::{Chain, ChainAdd, Shape};
use crate::windowed::{Loading, Windowed};

/// The most a fuzzed filter may grow to: a hostile size is refused
/// ("over the limit") rather than allocated.
const CAP: usize = 4 << 20;

/// The same for RedisBloom's filters, whose every state is copied several
/// times over to be reloaded (`assert_reloads`): RedisBloom's fixtures fit
/// (152 KB the largest).
const CHAIN_CAP: usize = 256 << 10;

/// Items each target adds after a load: enough to fill a small stage or
/// link and make the next.
const ITEMS: usize = 3_000;

/// Bit probes a RedisBloom target's adds may make (items × every link's
/// hashes).
const PROBES: usize = 300_000;

fn item(index: usize) -> Vec<u8> {
    format!("fuzz:{index}").into_bytes()
}

/// A RedisBloom header (`BF.LOADCHUNK key 1 header`), then adds, lookups,
/// and every way the filter goes out and comes back (`use_chain`).
pub fn redisbloom_header(data: &[u8]) {
    if let Ok(chain) = Chain::from_header(data, Some(CHAIN_CAP)) {
        use_chain(chain);
    }
}

/// Rates a [`redisbloom_chain`] link may have: RedisBloom's usual ones and
/// the smallest a double holds (whose next link's rate is 0).
const RATES: [f64; 8] = [0.25, 0.01, 1e-3, 1e-10, 1e-300, 1e-323, 5e-324, 0.5];

/// Item counts a [`redisbloom_chain`] link may claim: small, and at the
/// edges of 2^64.
const COUNTS: [u64; 8] = [0, 1, 2, 7, 1 << 60, (1 << 63) - 1, 1 << 63, u64::MAX];

/// A RedisBloom header built from `data` so that RedisBloom's own checks
/// pass (random bytes rarely make one): the fuzzer chooses the options,
/// the growth, up to 4,096 links (each a few words of bits at one of
/// [`RATES`], claiming one of [`COUNTS`] as its capacity and items), so
/// that chains at the module's limits (4,096 links, 2^64 - 1 items, a next
/// link that cannot be sized) are met at once. Then as
/// [`redisbloom_header`]: adds, and every way out and back in.
pub fn redisbloom_chain(data: &[u8]) {
    let mut bytes = data.iter().copied();
    let mut next = || bytes.next().unwrap_or(0);
    let flags = next();
    let options = u32::from(flags) & 0xf;
    // Mostly a few links; with the flag's high bit, up to 4,096.
    let count = u16::from_le_bytes([next(), next()]);
    let links = if flags & 0x80 != 0 {
        1 + usize::from(count) % 4096
    } else {
        1 + usize::from(count) % 8
    };
    let growth = u32::from_le_bytes([next(), next(), next(), 0]);
    let mut header = Vec::with_capacity(20 + 61 * links);
    header.extend_from_slice(&[0; 8]);
    header.extend_from_slice(&(links as u32).to_le_bytes());
    header.extend_from_slice(&options.to_le_bytes());
    header.extend_from_slice(&growth.to_le_bytes());
    let mut size = 0u64;
    for _ in 0..links {
        let (shape_byte, count_byte) = (next(), next());
        let rate = RATES[usize::from(shape_byte & 7)];
        let Ok(shape) = Shape::of(1 + u64::from(shape_byte >> 5), rate, options & !2) else {
            return;
        };
        let entries = COUNTS[usize::from(count_byte & 7)].max(1);
        let items = COUNTS[usize::from(count_byte >> 5)];
        size = size.wrapping_add(items);
        header.extend_from_slice(&shape.bytes().to_le_bytes());
        header.extend_from_slice(&shape.bits.to_le_bytes());
        header.extend_from_slice(&items.to_le_bytes());
        header.extend_from_slice(&shape.error.to_le_bytes());
        header.extend_from_slice(&shape.bpe.to_le_bytes());
        header.extend_from_slice(&shape.hashes.to_le_bytes());
        header.extend_from_slice(&entries.to_le_bytes());
        header.push(shape.n2);
    }
    header[..8].copy_from_slice(&size.to_le_bytes());
    redisbloom_header(&header);
}

/// A RedisBloom RDB value (first byte: the encoding version, 0 to 4; then
/// the fields as [`BytesInput`] reads them), then as above.
pub fn redisbloom_rdb(data: &[u8]) {
    let Some((&encver, fields)) = data.split_first() else {
        return;
    };
    let mut input = BytesInput(fields);
    if let Ok(chain) = rdb::load(&mut input, i32::from(encver % 5), Some(CHAIN_CAP)) {
        use_chain(chain);
    }
}

/// What the server does with a RedisBloom filter it took in: adds (each
/// then found; refused where the filter is full, at the memory cap, or at
/// the module's limits), then every way out and back in must take the
/// state the adds left (`assert_reloads`): a state a command leaves that
/// does not load again is a key that `DEBUG RELOAD`, a restart or a full
/// sync loses, or a server that does not start.
fn use_chain(mut chain: Chain) {
    // An add or a lookup may probe every hash of every link: adds stop
    // once they have cost `PROBES` (a chain that grows a link an item
    // grows long), so that an input runs in milliseconds.
    let probes = |chain: &Chain| -> usize {
        chain
            .links
            .iter()
            .map(|link| link.shape.hashes as usize)
            .sum()
    };
    let (mut spent, mut items) = (0, 0);
    while items < ITEMS && spent < PROBES {
        let item = item(items);
        items += 1;
        spent += probes(&chain);
        match chain.add(&item, Some(CHAIN_CAP)) {
            ChainAdd::Added(_) => assert!(chain.contains(&item), "an added item is missing"),
            ChainAdd::Full | ChainAdd::AtLimit => break,
            ChainAdd::OverLimit | ChainAdd::Failed => {}
        }
        assert!(
            chain.memory_bytes() <= CHAIN_CAP,
            "an add went past the cap"
        );
    }
    let lookups = (PROBES / probes(&chain).max(1)).clamp(1, items);
    assert_reloads(&chain, lookups);
}

/// `chain` goes out and comes back: its `BF.SCANDUMP` stream into
/// `BF.LOADCHUNK` (an AOF rewrite without an RDB preamble, a copy by a
/// client's loop), and its RDB value into `RESTORE` within the cap (a
/// client's) and without one (`DEBUG RELOAD`, a restart, a full sync, an
/// AOF's preamble): each loads, answers alike, and writes the same bytes.
fn assert_reloads(chain: &Chain, lookups: usize) {
    let mut iterator = 0;
    let mut streamed: Option<Chain> = None;
    loop {
        let (next, piece) = chain.scan_dump(iterator);
        if next == 0 {
            break;
        }
        match streamed.as_mut() {
            None => {
                let header = Chain::from_header(&piece, Some(CHAIN_CAP));
                let refused = header.as_ref().err();
                assert!(refused.is_none(), "its own header is refused: {refused:?}");
                streamed = header.ok();
            }
            Some(copy) => copy.load_piece(next, &piece).expect("its own piece loads"),
        }
        iterator = next;
    }
    let streamed = streamed.expect("a dump has a header");
    let mut saved = BytesOutput::default();
    rdb::save(chain, &mut saved);
    let restored = rdb::load(
        &mut BytesInput(&saved.0),
        rdb::ENCODING_VERSION,
        Some(CHAIN_CAP),
    );
    let refused = restored.as_ref().err();
    assert!(refused.is_none(), "its RDB value is refused: {refused:?}");
    let reloaded = rdb::load(&mut BytesInput(&saved.0), rdb::ENCODING_VERSION, None);
    let refused = reloaded.as_ref().err();
    assert!(
        refused.is_none(),
        "its RDB value does not reload: {refused:?}"
    );
    for copy in [streamed, restored.unwrap(), reloaded.unwrap()] {
        let mut again = BytesOutput::default();
        rdb::save(&copy, &mut again);
        assert!(again.0 == saved.0, "a reload saves other bytes");
        // The same bytes: lookups show they are read alike.
        for index in 0..lookups {
            let item = item(index);
            assert_eq!(
                copy.contains(&item),
                chain.contains(&item),
                "a reload answers otherwise"
            );
        }
    }
}

/// This module's record (a `RESTORE` payload's value, an RDB string, the
/// bytes `BF.LOADCHUNK` gathers), then adds, lookups and the dump.
pub fn record(data: &[u8]) {
    if let Ok(bloom) = Bloom::read_record(data) {
        // An older format version, or (a fuzzing build takes any checksum)
        // wrong checksums, load and are written back current and right: it
        // is what a loaded record writes that must load and write the same.
        let mut first = Vec::new();
        bloom.write_record(&mut first).expect("a Vec takes it");
        let again = Bloom::read_record(&first[..]).expect("what a loaded record writes loads");
        let mut second = Vec::new();
        again.write_record(&mut second).expect("a Vec takes it");
        assert_eq!(
            first, second,
            "a record written, read and written again is the same bytes"
        );
        use_bloom(bloom);
    }
}

/// A `BF.LOADCHUNK` stream for a missing key: chunks cut from `data` (each
/// a 2-byte length, then its bytes), each sent at the iterator after it
/// unless the length's top bit asks for one past it.
pub fn loadchunk_stream(mut data: &[u8]) {
    let mut sent = 0i64;
    let mut pending = None;
    while data.len() >= 2 {
        let header = u16::from_le_bytes([data[0], data[1]]);
        let length = usize::from(header & 0x7fff).min(data.len() - 2);
        let chunk = &data[2..2 + length];
        data = &data[2 + length..];
        let next = sent + 1 + length as i64 + i64::from(header >> 15);
        let outcome = match pending.as_mut() {
            None if dump::is_first_chunk(next, chunk) => {
                match dump::start(next, chunk, Some(CAP)) {
                    Ok(Ok(started)) => {
                        pending = Some(started);
                        Ok(None)
                    }
                    Ok(Err(ready)) => Ok(Some(ready)),
                    Err(refused) => Err(refused),
                }
            }
            None => return,
            Some(loading) => loading.resume(next, chunk),
        };
        match outcome {
            Ok(Some((bloom, _))) => return use_bloom(bloom),
            Ok(None) => sent += length as i64,
            Err(_) => return,
        }
    }
}

fn use_bloom(mut bloom: Bloom) {
    let items: Vec<Vec<u8>> = (0..ITEMS).map(item).collect();
    let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    let outcomes = bloom.add_many(&items, Some(CAP));
    let answers = bloom.exists_many(&items);
    for ((outcome, present), item) in outcomes.iter().zip(&answers).zip(&items) {
        if matches!(outcome, Added::Item(_)) {
            assert!(present, "an added item is missing: {item:?}");
        }
    }
    // Its dump, chunk by chunk, is its record; the record loads back and
    // answers alike.
    let state = DumpState::default();
    let mut dumped = Vec::new();
    let mut iterator = 0;
    let mut chunk = Vec::new();
    loop {
        let next = dump::scan_dump(&bloom, &state, iterator, &mut chunk);
        if next == 0 {
            break;
        }
        dumped.extend_from_slice(&chunk);
        iterator = next;
    }
    let mut record = Vec::new();
    bloom.write_record(&mut record).expect("a Vec takes it");
    assert_eq!(dumped, record, "the dump is the record");
    let copy = Bloom::read_record(record.as_slice()).expect("its own record loads");
    assert_eq!(
        copy.exists_many(&items),
        answers,
        "a reload answers otherwise"
    );
}

/// A windowed key's record (a `RESTORE` payload's value, its RDB string,
/// what `WBF.LOADCHUNK` gathers), whole and in two chunks cut where its
/// first byte says: refused, or a filter that loads alike both ways, then
/// is used as the server uses a key (`use_windowed`).
pub fn windowed_record(data: &[u8]) {
    let Ok(windowed) = Windowed::read_record(data, 0, Some(CAP)) else {
        return;
    };
    let cut = 64 + usize::from(data[0]);
    if cut < data.len() {
        let first = Loading::start(&data[..cut], 0).expect("a record's first chunk starts");
        let Err(loading) = first else {
            panic!("a cut record is whole");
        };
        let chunked = loading
            .resume(cut as u64, &data[cut..], 0)
            .expect("a record's second chunk loads")
            .unwrap_or_else(|_| panic!("the second chunk completes it"));
        assert_eq!(chunked.filter.epoch(), windowed.filter.epoch());
    }
    use_windowed(windowed, u64::from(crc32c::crc32c(data)));
}

/// Reads back what `windowed` writes at `saved_at`, on a clock at
/// `loaded_at` (another process's: only the time left travels).
fn reload(windowed: &Windowed, saved_at: i64, loaded_at: i64) -> Windowed {
    let mut record = Vec::new();
    windowed
        .write_record(&mut record, saved_at)
        .expect("a Vec takes it");
    Windowed::read_record(record.as_slice(), loaded_at, None).expect("its own record loads")
}

fn answers(windowed: &Windowed, items: &[Vec<u8>]) -> Vec<bool> {
    items
        .iter()
        .map(|item| windowed.filter.contains(item))
        .collect()
}

/// What the server does with a loaded key: adds (each then found), saves
/// it and reads it back elsewhere (the same answers, epoch and time left),
/// rotates it by a clock a day on (at most `g` generations), has a copy
/// follow those rotations as a replica does (`WBF.ADVANCE`: the same
/// answers), survives hostile clocks and `WBF.ADVANCE` arguments (`knob`),
/// ends every generation (nothing added is found then), and saves and
/// reloads alike.
fn use_windowed(mut windowed: Windowed, knob: u64) {
    let generations = u64::from(windowed.filter.generations());
    let items: Vec<Vec<u8>> = (0..ITEMS).map(item).collect();
    for item in &items {
        windowed.filter.insert(item);
        assert!(windowed.filter.contains(item), "an added item is missing");
    }
    let _ = crate::windowed::WindowValue::Ready(reload(&windowed, 0, 0)).memory_bytes();
    // Saved at 5 s on this clock, loaded at a day on another's.
    let (saved_at, elsewhere) = (5_000, 86_400_000);
    let mut copy = reload(&windowed, saved_at, elsewhere);
    assert_eq!(copy.filter.epoch(), windowed.filter.epoch());
    assert_eq!(answers(&copy, &items), answers(&windowed, &items));
    if windowed.is_timed() {
        let (span, left) = (windowed.span_ms(), windowed.left_ms(saved_at));
        let kept = left.clamp(-span.saturating_mul(generations as i64), span);
        assert_eq!(
            copy.left_ms(elsewhere),
            kept,
            "the time left changed on the way"
        );
    }
    // A day later by this clock: at most g rotations.
    let epoch = windowed.filter.epoch();
    let later = saved_at + 86_400_000;
    windowed.rotate_due(later);
    assert!(windowed.filter.epoch().wrapping_sub(epoch) <= generations);
    // The copy follows them, as a replica follows its primary.
    let followed = copy.follow(windowed.filter.epoch(), windowed.left_ms(later), elsewhere);
    assert_eq!(followed.is_ok(), windowed.is_timed(), "{followed:?}");
    if windowed.is_timed() {
        assert_eq!(copy.filter.epoch(), windowed.filter.epoch());
        assert_eq!(answers(&copy, &items), answers(&windowed, &items));
    }
    // Hostile clocks and arguments: refused or applied, never a panic.
    let mut hostile = reload(&windowed, later, i64::MAX - (knob as i64 & 0xffff));
    let steps = knob % (generations + 2);
    let _ = hostile.follow(
        hostile.filter.epoch().wrapping_add(steps),
        knob as i64,
        i64::MIN,
    );
    hostile.rotate_due(i64::MAX);
    hostile.rotate_due(i64::MIN);
    hostile.end_in(i64::MIN, i64::MAX);
    let _ = hostile.left_ms(i64::MIN);
    // Every generation ends: nothing added is found.
    for _ in 0..generations {
        windowed.filter.advance();
    }
    let kept = items
        .iter()
        .filter(|item| windowed.filter.contains(item))
        .count();
    assert_eq!(kept, 0, "items outlived {generations} rotations");
    let copy = reload(&windowed, later, 0);
    assert_eq!(copy.filter.epoch(), windowed.filter.epoch());
    assert_eq!(
        answers(&copy, &items),
        answers(&windowed, &items),
        "a reload answers otherwise"
    );
}

/// A RedisBloom cuckoo filter as foreign bytes bring it, the first byte
/// saying how: even, a `CF.LOADCHUNK` stream (a 38-byte header at iterator
/// 1, then pieces, each an 8-byte iterator and a 2-byte length before its
/// bytes); odd, an RDB value (the next byte's encoding version, 1 to 4,
/// then the fields as [`BytesInput`] reads them, bucket size 2 for the old
/// encodings). Refused, or a filter that takes inserts (each then found),
/// deletes, compactions and a duplicate flood within a byte cap, and whose
/// `CF.SCANDUMP` stream, RDB value and AOF rewrite load back into the same
/// filter (`use_cuckoo`).
pub fn cuckoo(data: &[u8]) {
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    let loaded = if how % 2 == 0 {
        cuckoo_stream(rest)
    } else {
        let Some((&encver, fields)) = rest.split_first() else {
            return;
        };
        let defaults = crate::cuckoo::Fields {
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
        };
        let encver = i32::from(encver % 4) + 1;
        crate::cuckoo::rdb::load(&mut BytesInput(fields), encver, defaults, Some(CAP as u64)).ok()
    };
    if let Some(cuckoo) = loaded {
        use_cuckoo(cuckoo);
    }
}

/// A header, then pieces, as `CF.LOADCHUNK` takes them.
fn cuckoo_stream(data: &[u8]) -> Option<Cuckoo> {
    let header = data.get(..crate::cuckoo::HEADER_BYTES)?;
    let mut cuckoo = Cuckoo::from_header(header, &Bounds::widest(), Some(CAP as u64)).ok()?;
    let mut rest = &data[crate::cuckoo::HEADER_BYTES..];
    while rest.len() >= 10 {
        let iterator = i64::from_le_bytes(rest[..8].try_into().ok()?);
        let length = usize::from(u16::from_le_bytes([rest[8], rest[9]])).min(rest.len() - 10);
        let _ = cuckoo.load_piece(iterator, &rest[10..10 + length]);
        rest = &rest[10 + length..];
    }
    Some(cuckoo)
}

/// What `cuckoo`'s RDB value loads back into.
fn cuckoo_reloaded(cuckoo: &Cuckoo) -> Cuckoo {
    let mut saved = crate::cuckoo::rdb::BytesOutput(Vec::new());
    crate::cuckoo::rdb::save(cuckoo, &mut saved);
    let defaults = crate::cuckoo::Fields {
        bucket_size: 1,
        max_iterations: 1,
        expansion: 0,
    };
    let again = crate::cuckoo::rdb::load(&mut BytesInput(&saved.0), 4, defaults, None)
        .expect("what a held filter saves loads");
    let mut second = crate::cuckoo::rdb::BytesOutput(Vec::new());
    crate::cuckoo::rdb::save(&again, &mut second);
    assert_eq!(
        saved.0, second.0,
        "a filter saved, loaded and saved is the same bytes"
    );
    again
}

/// What the AOF rewrite writes (the header, then every piece), loaded.
fn cuckoo_rewritten(cuckoo: &Cuckoo) -> Cuckoo {
    let mut copy = Cuckoo::from_header(&cuckoo.header(), &Bounds::widest(), None)
        .expect("a held filter's header loads");
    let mut iterator = 1;
    let mut piece = Vec::new();
    while let Scanned::Piece(next) = cuckoo.pieces_from(iterator, &mut piece) {
        assert!(copy.load_piece(next, &piece), "its own piece loads");
        iterator = next;
    }
    // The rewrite's pieces in place are the same bytes.
    let walked = cuckoo.try_clone().expect("memory for a copy");
    let mut iterator = 1;
    let mut copied = Vec::new();
    while let Some((next, piece)) = walked.piece_in_place(iterator) {
        assert!(
            matches!(cuckoo.pieces_from(iterator, &mut copied), Scanned::Piece(n) if n == next)
        );
        assert_eq!(piece, &copied[..], "a piece in place differs from its copy");
        iterator = next;
    }
    copy
}

/// Items `use_cuckoo` inserts: a filter may hold thousands of
/// sub-filters, each insert looking in all of them.
const CUCKOO_ITEMS: usize = 300;

fn use_cuckoo(mut cuckoo: Cuckoo) {
    let cap = Some(CAP as u64);
    let items: Vec<Vec<u8>> = (0..CUCKOO_ITEMS).map(item).collect();
    for (index, item) in items.iter().enumerate() {
        let lookup = Lookup::of(item);
        let growth = if index % 2 == 0 {
            Growth::NotForDuplicates
        } else {
            Growth::AsRedisBloom
        };
        if cuckoo.insert(&lookup, index % 3 == 0, growth, cap) == Insert::Inserted {
            assert!(cuckoo.contains(&lookup), "an inserted item is missing");
        }
    }
    for item in items.iter().step_by(7) {
        let lookup = Lookup::of(item);
        let before = cuckoo.count(&lookup);
        if cuckoo.delete(&lookup) && cuckoo.filters().len() == 1 {
            assert_eq!(cuckoo.count(&lookup), before - 1, "a delete took no copy");
        }
    }
    // A hot duplicate: a client's flood grows the filter at most once (to
    // make room for its first copies), never for the copies after them.
    // (Where sub-filters have buckets other than a power of two, which only
    // a hand-made expansion gives, relocation does not come back to the
    // bucket it left, and other fingerprints can share the hot item's.)
    let hot = Lookup::of(b"hot");
    let filters = cuckoo.filters().len();
    for _ in 0..100 {
        cuckoo.insert(&hot, false, Growth::NotForDuplicates, cap);
    }
    if cuckoo.expansion.is_power_of_two() {
        assert!(
            cuckoo.filters().len() <= filters + 1,
            "duplicates grew the filter"
        );
    }
    cuckoo.compact(true);
    let answers: Vec<u64> = items
        .iter()
        .map(|item| cuckoo.count(&Lookup::of(item)))
        .collect();
    let _ = cuckoo.debug_line();
    let _ = cuckoo.memory_bytes();
    let _ = cuckoo.scan_dump(0, &mut Vec::new());
    for copy in [cuckoo_reloaded(&cuckoo), cuckoo_rewritten(&cuckoo)] {
        let again: Vec<u64> = items
            .iter()
            .map(|item| copy.count(&Lookup::of(item)))
            .collect();
        assert_eq!(again, answers, "a reload answers otherwise");
        assert_eq!(copy.header(), cuckoo.header(), "a reload has other fields");
    }
}
