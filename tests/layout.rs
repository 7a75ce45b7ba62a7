//! The source layout, kept by a ratchet: no production file of `src/` over [`LIMIT`] lines,
//! and no import cycle between the files of `src/`.
//!
//! Production lines are a file's lines outside `#[cfg(test)]` items (a test module, or a
//! test-only fn, impl or use, with the doc comment above it); a file declared only under
//! `#[cfg(test)]` has none. The edges are file-to-file dependencies written outside test code:
//! `use` items and paths in code (`crate::`, `super::`, `self::`, or a child module's name),
//! each resolved to the file of the deepest module it names, following a `use` in that module
//! to the file that defines the item. `mod` declarations are not edges.
//!
//! Today's oversized files and cycles are listed in [`KNOWN_LARGE`] and [`KNOWN_CYCLES`]; the
//! test fails on anything beyond them and on an entry that no longer applies, so the lists
//! only shrink. `cargo test --test layout -- --nocapture` prints the largest files and every
//! cycle with its edges. Needs no service.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The most production lines a file of `src/` may have.
const LIMIT: usize = 800;

/// Files over [`LIMIT`] today, with their production line count. This list only shrinks: a
/// file may not grow past its count, and its entry goes once the file is split.
const KNOWN_LARGE: &[(&str, usize)] = &[];

/// Today's import cycles (strongly connected components of the file graph), each sorted. This
/// list only shrinks: a cycle may not grow, and its entry goes once it is broken.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// The module path of the binary crate's root (`src/main.rs`), which names the library
/// `sluice::`.
const BIN: &str = "#bin";

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// How many bytes at the start of `s` satisfy `f`.
fn run(s: &[u8], f: impl Fn(u8) -> bool) -> usize {
    s.iter().take_while(|&&c| f(c)).count()
}

/// The length of the UTF-8 character that starts with `c`.
fn utf8_len(c: u8) -> usize {
    (c.leading_ones() as usize).max(1)
}

/// The source with comments and string and char literals blanked out (newlines kept), so
/// brackets and paths can be read from what is left.
fn mask(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let word = |k: usize| k == 0 || !is_ident(b[k - 1]);
        let hashes = run(&b[i + 1..], |c| c == b'#');
        let raw =
            (word(i) || (b[i - 1] == b'b' && word(i - 1))) && b.get(i + 1 + hashes) == Some(&b'"');
        let len = match (b[i], b.get(i + 1).copied()) {
            (b'/', Some(b'/')) => run(&b[i..], |c| c != b'\n'),
            (b'/', Some(b'*')) => {
                let (mut depth, mut k) = (0, i);
                while k < b.len() && (depth > 0 || k == i) {
                    let step = [&b"/*"[..], b"*/"]
                        .iter()
                        .position(|p| b[k..].starts_with(p));
                    depth += [1, -1, 0][step.unwrap_or(2)];
                    k += if step.is_some() { 2 } else { 1 };
                }
                k - i
            }
            (b'r', Some(b'"' | b'#')) if raw => {
                let close = [&b"\""[..], &vec![b'#'; hashes]].concat();
                let body = &b[i + 2 + hashes..];
                let end = body.windows(close.len()).position(|w| w == close);
                2 + hashes + end.map_or(body.len(), |p| p + close.len())
            }
            (b'"', _) => {
                let mut k = i + 1;
                while k < b.len() && b[k] != b'"' {
                    k += 1 + usize::from(b[k] == b'\\');
                }
                k + 1 - i
            }
            (b'\'', Some(b'\\')) => 4 + run(b.get(i + 3..).unwrap_or(&[]), |c| c != b'\''),
            (b'\'', Some(c)) if b.get(i + 1 + utf8_len(c)) == Some(&b'\'') => 2 + utf8_len(c),
            _ => 0, // code, or a lifetime
        };
        for c in &mut out[i..(i + len).min(b.len())] {
            *c = if *c == b'\n' { b'\n' } else { b' ' };
        }
        i += len.max(1);
    }
    out
}

/// The byte ranges of the `#[cfg(test)]` items of a masked source, attribute included: to the
/// `;` or the closing brace of the item (or, for a field, to the `,` after it).
fn test_items(m: &[u8]) -> Vec<(usize, usize)> {
    let attr = b"#[cfg(test)]";
    let mut out = Vec::new();
    for start in (0..m.len()).filter(|&i| m[i..].starts_with(attr)) {
        let (mut depth, mut saw_eq, mut k) = (0, false, start + attr.len());
        while k < m.len() {
            match m[k] {
                b')' | b']' | b'}' | b',' if depth == 0 => break,
                b'}' if depth == 1 && !saw_eq => {
                    let ws = run(&m[k + 1..], |c| c.is_ascii_whitespace());
                    k += 1 + usize::from(m.get(k + 1 + ws) == Some(&b';'));
                    break;
                }
                b';' if depth == 0 => {
                    k += 1;
                    break;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'=' if depth == 0 => saw_eq = true,
                _ => {}
            }
            k += 1;
        }
        out.push((start, k.min(m.len())));
    }
    out
}

fn line_starts(m: &[u8]) -> Vec<usize> {
    let ends = (0..m.len()).filter(|&i| m[i] == b'\n').map(|i| i + 1);
    std::iter::once(0).chain(ends).collect()
}

/// The 1-based line of a byte offset.
fn line_of(starts: &[usize], at: usize) -> usize {
    starts.partition_point(|&s| s <= at)
}

/// The lines outside `#[cfg(test)]` items and the doc comments and attributes right above them.
fn production_lines(src: &str) -> usize {
    let (m, lines) = (mask(src), src.lines().collect::<Vec<_>>());
    let starts = line_starts(&m);
    let mut test = vec![false; lines.len()];
    for (from, to) in test_items(&m) {
        let mut first = line_of(&starts, from) - 1;
        let above = |l: usize| ["///", "#["].iter().any(|p| lines[l].trim().starts_with(p));
        while first > 0 && above(first - 1) {
            first -= 1;
        }
        let last = line_of(&starts, to.saturating_sub(1).max(from));
        test[first..last.min(lines.len())].fill(true);
    }
    test.iter().filter(|t| !**t).count()
}

/// The end of the identifier starting at `i`, unless `i` is inside a longer word.
fn ident_at(m: &[u8], i: usize) -> Option<usize> {
    let first = matches!(m.get(i), Some(&c) if c == b'_' || c.is_ascii_alphabetic());
    (first && (i == 0 || !is_ident(m[i - 1]))).then(|| i + run(&m[i..], is_ident))
}

fn word(m: &[u8], from: usize, to: usize) -> String {
    String::from_utf8_lossy(&m[from..to]).into_owned()
}

/// A `mod` item: its name, offset, `#[path]`, and, when inline, its body's end.
struct Mod {
    name: String,
    at: usize,
    path: Option<String>,
    body_end: Option<usize>,
}

fn mod_items(src: &str, m: &[u8]) -> Vec<Mod> {
    let mut out = Vec::new();
    for at in (0..m.len()).filter(|&i| m[i..].starts_with(b"mod ") && ident_at(m, i).is_some()) {
        let n = at + 4 + run(&m[at + 4..], |c| c.is_ascii_whitespace());
        let Some(end) = ident_at(m, n) else { continue };
        let after = end + run(&m[end..], |c| c.is_ascii_whitespace());
        let mut depth = 0;
        let body_end = match m.get(after) {
            Some(b';') => None,
            Some(b'{') => m[after..].iter().position(|&c| {
                depth += i32::from(c == b'{') - i32::from(c == b'}');
                depth == 0
            }),
            _ => continue,
        };
        let item_start = m[..at].iter().rposition(|c| b";{}".contains(c));
        let attrs = &src[item_start.map_or(0, |p| p + 1)..at];
        let path = attrs
            .split_once("#[path = \"")
            .and_then(|p| p.1.split_once('"'));
        let (name, path, body_end) = (
            word(m, n, end),
            path.map(|p| p.0.to_string()),
            body_end.map(|p| after + p),
        );
        out.push(Mod {
            name,
            at,
            path,
            body_end,
        });
    }
    out
}

/// The inline modules around offset `at`, outermost first.
fn inline_scope(mods: &[Mod], at: usize) -> Vec<String> {
    let around = |o: &&Mod| o.at < at && o.body_end.is_some_and(|e| at < e);
    mods.iter().filter(around).map(|o| o.name.clone()).collect()
}

/// One path of a `use` item: its segments, the name it binds and its offset.
struct Leaf {
    segs: Vec<String>,
    bind: Option<String>,
    at: usize,
}

/// Flattens the use tree at `toks[*i]` (tokens with offsets) under the segments `segs`.
fn use_tree(toks: &[(String, usize)], i: &mut usize, mut segs: Vec<String>, out: &mut Vec<Leaf>) {
    let tok = |i: usize| toks.get(i).map_or("", |t| t.0.as_str());
    loop {
        let at = toks.get(*i).map_or(0, |t| t.1);
        match tok(*i) {
            "{" => {
                *i += 1;
                while !matches!(tok(*i), "}" | "") {
                    use_tree(toks, i, segs.clone(), out);
                    *i += usize::from(!matches!(tok(*i), "}" | "")); // the `,`, or junk
                }
                return *i += 1;
            }
            "*" => {
                *i += 1;
                let bind = None;
                return out.push(Leaf { segs, bind, at });
            }
            "::" => *i += 1,
            t if t.bytes().next().is_some_and(is_ident) => {
                segs.push(t.to_string());
                *i += 1;
                if tok(*i) == "::" {
                    continue;
                }
                if segs.last().is_some_and(|s| s == "self") {
                    segs.pop();
                }
                let mut bind = segs.last().cloned();
                if tok(*i) == "as" {
                    bind = Some(tok(*i + 1).to_string()).filter(|b| b != "_");
                    *i += 2;
                }
                return out.push(Leaf { segs, bind, at });
            }
            _ => return,
        }
    }
}

/// The leaves of the `use` item whose tree starts at `from`, and the offset of its `;`.
fn parse_use(m: &[u8], from: usize) -> (Vec<Leaf>, usize) {
    let end = from + run(&m[from..], |c| c != b';');
    let (mut toks, mut k) = (Vec::new(), from);
    while k < end {
        let len = match run(&m[k..end], is_ident) {
            0 => 1 + usize::from(m[k..].starts_with(b"::")),
            n => n,
        };
        if !m[k].is_ascii_whitespace() {
            toks.push((word(m, k, k + len), k));
        }
        k += len;
    }
    let mut out = Vec::new();
    use_tree(&toks, &mut 0, Vec::new(), &mut out);
    (out, end)
}

/// Module paths (crate-absolute; the binary's under [`BIN`]) and the file each is in.
type Modules = HashMap<Vec<String>, usize>;
/// What each module's `use` items bind: name → crate-absolute path.
type Binds = HashMap<Vec<String>, HashMap<String, Vec<String>>>;

/// A path written in module `scope`, made crate-absolute; `None` when it leaves the crate.
fn absolute(segs: &[String], scope: &[String], modules: &Modules) -> Option<Vec<String>> {
    let bin = scope.first().is_some_and(|s| s == BIN);
    let (mut base, mut rest) = (scope.to_vec(), segs);
    match segs.first()?.as_str() {
        "crate" => (base, rest) = (scope[..usize::from(bin)].to_vec(), &segs[1..]),
        "sluice" if bin => (base, rest) = (Vec::new(), &segs[1..]),
        "self" => rest = &segs[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        first => _ = modules.get(&[scope, &[first.to_string()]].concat())?,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file a crate-absolute path lands in: that of its deepest module, or, when the segment
/// after it is a name that module imports, the file that import lands in.
fn resolve(abs: &[String], modules: &Modules, binds: &Binds, depth: usize) -> Option<usize> {
    let k = (0..=abs.len()).rfind(|&k| modules.contains_key(&abs[..k]))?;
    let imported = binds.get(&abs[..k]).and_then(|b| b.get(abs.get(k)?));
    let next = |to: &Vec<String>| resolve(&[to, &abs[k + 1..]].concat(), modules, binds, depth + 1);
    let through = imported.filter(|_| depth < 8).and_then(next);
    through.or(modules.get(&abs[..k]).copied())
}

/// The analysed tree: each file's path and production lines (`None`: not in the module tree),
/// and the file-to-file edges with the lines that make them.
struct Layout {
    files: Vec<(String, Option<usize>)>,
    edges: BTreeMap<(usize, usize), BTreeSet<usize>>,
}

/// Analyses the given files (paths `src/...`), walking the module tree from `src/lib.rs` and
/// `src/main.rs`.
fn analyse(files: &[(String, String)]) -> Layout {
    let index: HashMap<&str, usize> = (0..files.len()).map(|f| (&*files[f].0, f)).collect();
    let masked: Vec<Vec<u8>> = files.iter().map(|f| mask(&f.1)).collect();
    let tests: Vec<_> = masked.iter().map(|m| test_items(m)).collect();
    let mods: Vec<_> = (0..files.len())
        .map(|f| mod_items(&files[f].1, &masked[f]))
        .collect();
    let mut module: Vec<Option<(Vec<String>, bool)>> = vec![None; files.len()];
    let mut modules = Modules::new();
    let mut todo = vec![("src/main.rs".into(), vec![BIN.into()], false, true)];
    todo.push(("src/lib.rs".to_string(), vec![], false, true));
    while let Some((path, mpath, test, mod_rs)) = todo.pop() {
        let Some(&f) = index.get(path.as_str()) else {
            continue;
        };
        let dir = path.rsplit_once('/').map_or("", |d| d.0);
        let child_dir = if mod_rs {
            dir
        } else {
            path.trim_end_matches(".rs")
        };
        for item in &mods[f] {
            let scope = inline_scope(&mods[f], item.at);
            let name = &item.name;
            let test = test || tests[f].iter().any(|t| t.0 <= item.at && item.at < t.1);
            let child = [&mpath[..], &scope, std::slice::from_ref(name)].concat();
            let base = scope.iter().fold(child_dir.to_string(), |d, s| d + "/" + s);
            let candidates = match (&item.path, item.body_end) {
                (_, Some(_)) => vec![],
                (Some(p), None) => vec![(format!("{dir}/{p}"), true)],
                (None, None) => vec![
                    (format!("{base}/{name}.rs"), false),
                    (format!("{base}/{name}/mod.rs"), true),
                ],
            };
            if item.body_end.is_some() {
                modules.insert(child.clone(), f);
            }
            let found = candidates.into_iter().find(|c| index.contains_key(&*c.0));
            todo.extend(found.map(|(p, mod_rs)| (p, child, test, mod_rs)));
        }
        modules.insert(mpath.clone(), f);
        module[f] = Some((mpath, test));
    }
    let (mut refs, mut binds) = (Vec::new(), Binds::new());
    for (f, m) in masked.iter().enumerate() {
        let Some((mpath, false)) = &module[f] else {
            continue;
        };
        let mut prod = m.clone();
        tests[f].iter().for_each(|&(a, b)| prod[a..b].fill(b' '));
        let mut i = 0;
        while i < prod.len() {
            let Some(end) = ident_at(&prod, i) else {
                i += 1;
                continue;
            };
            let here = [&mpath[..], &inline_scope(&mods[f], i)].concat();
            if &prod[i..end] == b"use" && prod.get(end).is_some_and(u8::is_ascii_whitespace) {
                let (leaves, semi) = parse_use(&prod, end);
                for leaf in leaves {
                    let Some(abs) = absolute(&leaf.segs, &here, &modules) else {
                        continue;
                    };
                    let scope = binds.entry(here.clone()).or_default();
                    leaf.bind.map(|bind| scope.insert(bind, abs.clone()));
                    refs.push((f, abs, leaf.at));
                }
                i = semi;
                continue;
            }
            let (mut segs, mut k) = (vec![word(&prod, i, end)], end);
            let step = |k: usize| prod[k..].starts_with(b"::").then(|| ident_at(&prod, k + 2));
            while let Some(next) = step(k).flatten() {
                segs.push(word(&prod, k + 2, next));
                k = next;
            }
            if segs.len() > 1 && !(i > 0 && matches!(prod[i - 1], b':' | b'.')) {
                refs.extend(absolute(&segs, &here, &modules).map(|abs| (f, abs, i)));
            }
            i = k;
        }
    }
    let starts: Vec<_> = masked.iter().map(|m| line_starts(m)).collect();
    let mut edges: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    for (f, abs, at) in refs {
        let prod = |to: &usize| *to != f && matches!(module[*to], Some((_, false)));
        if let Some(to) = resolve(&abs, &modules, &binds, 0).filter(prod) {
            let lines = edges.entry((f, to)).or_default();
            lines.insert(line_of(&starts[f], at));
        }
    }
    let lines = |f: usize| {
        module[f].as_ref().map(|m| {
            if m.1 {
                0
            } else {
                production_lines(&files[f].1)
            }
        })
    };
    Layout {
        files: (0..files.len())
            .map(|f| (files[f].0.clone(), lines(f)))
            .collect(),
        edges,
    }
}

/// The strongly connected components of more than one node (Tarjan), each sorted.
fn cycles(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    /// Per node its index and low link, the stack, and the components found.
    type Walk = (Vec<Option<usize>>, Vec<usize>, Vec<usize>, Vec<Vec<usize>>);
    fn visit(adj: &[Vec<usize>], w: &mut Walk, v: usize) {
        let n = w.0.iter().flatten().count();
        (w.0[v], w.1[v]) = (Some(n), n);
        w.2.push(v);
        for &u in &adj[v] {
            match w.0[u] {
                None => visit(adj, w, u),
                Some(_) if !w.2.contains(&u) => continue,
                Some(_) => {}
            }
            w.1[v] = w.1[v].min(w.1[u]);
        }
        if w.0[v] == Some(w.1[v]) {
            let at = w.2.iter().rposition(|&u| u == v).expect("on the stack");
            let mut scc = w.2.split_off(at);
            scc.sort_unstable();
            w.3.extend((scc.len() > 1).then_some(scc));
        }
    }
    let n = adj.len();
    let mut w: Walk = (vec![None; n], vec![0; n], vec![], vec![]);
    (0..n).for_each(|v| {
        if w.0[v].is_none() {
            visit(adj, &mut w, v)
        }
    });
    w.3.sort();
    w.3
}

/// Every `.rs` file under `dir`, as (path relative to `root`, text).
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("read src/").path();
        let name = path
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy();
        let name = name.replace('\\', "/");
        if path.is_dir() {
            read_tree(root, &path, out);
        } else if name.ends_with(".rs") {
            out.push((
                name,
                std::fs::read_to_string(&path).expect("read a source file"),
            ));
        }
    }
}

#[test]
fn no_file_over_the_limit_and_no_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    read_tree(root, &root.join("src"), &mut files);
    files.sort();
    let layout = analyse(&files);
    let name = |f: usize| layout.files[f].0.as_str();
    let mut adj = vec![Vec::new(); layout.files.len()];
    for &(from, to) in layout.edges.keys() {
        adj[from].push(to);
    }
    let found = cycles(&adj);
    let describe = |scc: &[usize]| {
        let mut text = format!(
            "  {}\n",
            scc.iter().map(|&f| name(f)).collect::<Vec<_>>().join(", ")
        );
        for ((a, b), lines) in &layout.edges {
            if !scc.contains(a) || !scc.contains(b) {
                continue;
            }
            let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            text += &format!(
                "    {} → {}  (line {})\n",
                name(*a),
                name(*b),
                lines.join(", ")
            );
        }
        text
    };
    let mut largest: Vec<_> = layout
        .files
        .iter()
        .map(|f| (f.1.unwrap_or(0), &f.0))
        .collect();
    largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    eprintln!("The largest production files (limit {LIMIT} lines):");
    for (lines, file) in largest.iter().take(15) {
        eprintln!(
            "  {lines:>5}  {file}{}",
            if *lines > LIMIT { "  (over)" } else { "" }
        );
    }
    eprintln!("Import cycles: {}", found.len());
    found.iter().for_each(|scc| eprint!("{}", describe(scc)));

    let mut failures = Vec::new();
    let known: HashMap<&str, usize> = KNOWN_LARGE.iter().copied().collect();
    let split = "split it into files of one idea each (its tests into <module>/tests.rs)";
    for (file, lines) in &layout.files {
        match (known.get(file.as_str()), lines) {
            (_, None) => failures.push(format!(
                "{file} is not reached by `mod` items from src/lib.rs or src/main.rs: declare it \
                 or remove it"
            )),
            (None, Some(n)) if *n > LIMIT => failures.push(format!(
                "{file} has {n} production lines (outside #[cfg(test)] items), over the limit of \
                 {LIMIT}: {split}"
            )),
            (Some(&was), Some(n)) if *n > was => failures.push(format!(
                "{file} has {n} production lines, more than the {was} KNOWN_LARGE records (limit \
                 {LIMIT}): a file over the limit may not grow; {split}, or put the new code elsewhere"
            )),
            _ => {}
        }
    }
    for (file, _) in KNOWN_LARGE {
        match layout.files.iter().find(|f| f.0 == *file) {
            None => failures.push(format!(
                "{file} no longer exists: remove its entry from KNOWN_LARGE"
            )),
            Some((_, Some(n))) if *n <= LIMIT => failures.push(format!(
                "{file} has {n} production lines, within the limit of {LIMIT}: remove its entry \
                 from KNOWN_LARGE"
            )),
            _ => {}
        }
    }
    let names: Vec<Vec<&str>> = found
        .iter()
        .map(|c| c.iter().map(|&f| name(f)).collect())
        .collect();
    let subset = |a: &[&str], b: &[&str]| a.iter().all(|f| b.contains(f));
    let break_it = "No cycle beyond KNOWN_CYCLES is allowed: break it by moving the item both \
                    sides need into a module both use";
    for (scc, files) in found.iter().zip(&names) {
        if KNOWN_CYCLES.contains(&&files[..]) {
            continue;
        }
        let what = match KNOWN_CYCLES.iter().find(|k| subset(k, files)) {
            Some(k) => {
                let added: Vec<_> = files.iter().filter(|f| !k.contains(f)).collect();
                format!("A known import cycle grew, taking in {added:?}. {break_it}")
            }
            None if KNOWN_CYCLES.iter().any(|k| subset(files, k)) => {
                "A known import cycle shrank to these files: replace its KNOWN_CYCLES entry with \
                 them"
                    .to_string()
            }
            None => format!("A new import cycle. {break_it}"),
        };
        failures.push(format!(
            "{what}. The cycle and its edges:\n{}",
            describe(scc)
        ));
    }
    for known in KNOWN_CYCLES {
        if !names.iter().any(|n| subset(n, known) || subset(known, n)) {
            failures.push(format!(
                "KNOWN_CYCLES entry {known:?} is no longer a cycle: remove it"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the source layout:\n{}",
        failures.join("\n")
    );
}

#[test]
fn counts_lines_outside_test_items() {
    let src = r##"//! A sample.
fn a() {}
#[cfg(test)]
mod tests {
    const S: &str = "}}} {";
    const R: &str = r#"{ "x": "}" }"#;
    const C: [char; 2] = ['}', '\''];
    // }
    /* { /* } */ */
    fn f<'a>(x: &'a str) -> &'a str { x }
}
/// A helper for tests.
#[cfg(test)]
pub(crate) fn helper() {
    let _ = '{';
}
#[cfg(test)]
use std::fmt;
#[cfg(test)]
const LIST: [u8; 2] = [1, 2];
fn b() {}
"##;
    assert_eq!(production_lines(src), 3);
    assert_eq!(
        production_lines("fn a() {}\n#[cfg(test)]\n#[path = \"t.rs\"]\nmod tests;\n"),
        1
    );
}

#[test]
fn flattens_a_grouped_multi_line_use() {
    let src = "use crate::{\n    a::b,\n    c::{self, D as E},\n    f::*,\n};";
    let m = mask(src);
    let (leaves, end) = parse_use(&m, 3);
    assert_eq!(end, src.len() - 1);
    let line = |l: &Leaf| line_of(&line_starts(&m), l.at);
    let seen: Vec<_> = leaves
        .iter()
        .map(|l| (l.segs.join("::"), l.bind.as_deref(), line(l)))
        .collect();
    let want = [
        ("crate::a::b", Some("b"), 2),
        ("crate::c", Some("c"), 3),
        ("crate::c::D", Some("E"), 3),
    ];
    assert_eq!(seen[..3], want.map(|(p, b, l)| (p.to_string(), b, l)));
    assert_eq!(seen[3], ("crate::f".to_string(), None, 4));
}

#[test]
fn finds_a_cycle_of_three_and_ignores_self_edges() {
    assert_eq!(
        cycles(&[vec![1], vec![2], vec![0, 2], vec![0, 3], vec![4]]),
        [[0, 1, 2]]
    );
    let tree = "\
== src/lib.rs
pub mod a;
pub mod b;
mod c;
#[cfg(test)]
mod d;
== src/a/mod.rs
//! crate::c::X
mod inner;
pub use inner::Y;
use self::inner::Z;
== src/a/inner.rs
use super::super::b::Item;
fn f() { let s = \"crate::c::X\"; }
== src/b.rs
pub use crate::c::{self, X as Item};
fn f() -> crate::b::W { todo!() }
== src/c.rs
fn f() { crate::a::Y::new(); }
#[cfg(test)]
mod tests { use crate::b::W; }
== src/d.rs
use crate::a::inner;
";
    let files = tree
        .split("== ")
        .skip(1)
        .map(|f| f.split_once('\n').expect("a name line"));
    let layout = analyse(
        &files
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect::<Vec<_>>(),
    );
    let edges: Vec<_> = layout
        .edges
        .iter()
        .map(|(e, l)| (*e, l.iter().copied().collect::<Vec<_>>()))
        .collect();
    assert_eq!(
        edges,
        [
            ((1, 2), vec![3, 4]),
            ((2, 4), vec![1]),
            ((3, 4), vec![1]),
            ((4, 2), vec![1])
        ]
    );
    let lines: Vec<_> = layout.files.iter().map(|f| f.1).collect();
    assert_eq!(lines, [3, 4, 2, 2, 1, 0].map(Some));
}
