//! The layers of the library (docs/development.md, "Layout and checks"): a module imports only
//! from its own floor or below, the I/O edges are imported by no pure floor, no two modules
//! import each other, and a renderer (`table.rs`) is imported only by the app. Read from the sources, test code left out
//! (a test may drive its module through higher floors).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Pure floors, lowest first.
const FLOORS: &[&[&str]] = &[
    &["model", "release", "term"],
    &["dra", "config"],
    &["framework"],
    &["preemption"],
    &["plugins"],
    &["explain", "plan", "lease"],
    // Each floor's answers put side by side: two releases' (compare), the changes that would
    // make a pod fit (suggest).
    &["compare", "suggest"],
];
/// I/O edges: they may use the pure floors; no pure floor uses them.
const EDGES: &[&str] = &["source", "extender"];
/// The wiring on top: it may use everything.
const TOP: &[&str] = &["app", "cli"];

fn is_top_level(module: &str) -> bool {
    floor(module).is_some() || EDGES.contains(&module) || TOP.contains(&module)
}

fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/` (`plugins/registry/mod.rs` → `[plugins, registry]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without its test code: `#[cfg(test)]` modules, inline or in their own files
/// (those files are skipped by the caller), and single `#[cfg(test)]` items.
fn without_tests(source: &str) -> String {
    let mut out = String::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            // Comments name modules without importing them.
            out.push_str(line.split("//").next().unwrap_or(""));
            out.push('\n');
            continue;
        }
        // Skip the item that follows: up to its closing brace at the same indentation, or its
        // semicolon.
        let Some(item) = lines.next() else { break };
        if item.trim_end().ends_with(';') {
            continue;
        }
        let indent = item.len() - item.trim_start().len();
        let closing = format!("{}}}", " ".repeat(indent));
        for l in lines.by_ref() {
            if l.starts_with(&closing) && l.trim_end().len() <= closing.len() + 1 {
                break;
            }
        }
    }
    out
}

/// Files declared with `#[cfg(test)] mod name;`: test code through and through.
fn test_only_files(src: &Path, files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(file).unwrap();
        let mut lines = source.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let Some(decl) = lines.next() else { break };
            let Some(name) = decl
                .trim()
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|d| d.strip_suffix(';'))
            else {
                continue;
            };
            let dir = if file
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
            {
                file.parent().unwrap().to_path_buf()
            } else {
                file.with_extension("")
            };
            for candidate in [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ] {
                if candidate.exists() {
                    out.insert(candidate.strip_prefix(src).unwrap().to_path_buf());
                }
            }
        }
    }
    out
}

/// The top-level modules a file's code names: `crate::x`, `use crate::{x, …}`, and `super::`
/// chains that climb out of its own top-level module.
fn imports(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        let after = &rest[i + "crate::".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let mut nesting = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => nesting += 1,
                    '}' if nesting == 0 => break,
                    '}' => nesting -= 1,
                    ',' if nesting == 0 => {
                        out.insert(ident(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.insert(ident(item.trim()));
        } else {
            out.insert(ident(after));
        }
    }
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let mut climbed = 0;
        let mut tail = &rest[i..];
        while let Some(t) = tail.strip_prefix("super::") {
            climbed += 1;
            tail = t;
        }
        // Inline modules (`mod seconds { use super::f; }`) climb less than they seem to: only a
        // chain that ends at a top-level module's name leaves the file's own module.
        let name = ident(tail);
        if climbed >= depth && is_top_level(&name) {
            out.insert(name);
        }
        rest = &rest[i + "super::".len() * climbed..];
    }
    out.retain(|m| !m.is_empty());
    out
}

/// The sibling files a file of a top-level module names: `super::x` from `top/file.rs` and
/// `crate::top::x`.
fn sibling_imports(code: &str, top: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for prefix in ["super::".to_string(), format!("crate::{top}::")] {
        for (i, _) in code.match_indices(&prefix) {
            let before = code[..i].chars().last();
            let after = &code[i + prefix.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                || after.starts_with("super::")
            {
                continue;
            }
            if let Some(group) = after.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                out.extend(group.split(',').map(|g| ident(g.trim())));
            } else {
                out.insert(ident(after));
            }
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// A cycle in `graph`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            return Some(path[i..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Files of one module that are one unit: the PostFilter extension point (`plugin.rs`) gets the
/// framework that runs it (`runner.rs`), for preemption to run the filters again; upstream
/// passes the same through its `Handle` interface.
const ONE_UNIT: &[(&str, &str, &str)] = &[("framework", "plugin", "runner")];

/// Within a module, its files import each other in one direction only: helpers two commands
/// share live below both, not in one of them.
#[test]
fn the_files_of_a_module_import_each_other_in_one_direction() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let test_only = test_only_files(&src, &files);
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let path = module_path(relative);
        if path.len() != 2 || test_only.contains(relative) {
            continue;
        }
        let code = without_tests(&std::fs::read_to_string(file).unwrap());
        let siblings = graphs.entry(path[0].clone()).or_default();
        let used = sibling_imports(&code, &path[0]);
        siblings.entry(path[1].clone()).or_default().extend(used);
    }
    for graph in graphs.values_mut() {
        let files: BTreeSet<String> = graph.keys().cloned().collect();
        for (file, used) in graph.iter_mut() {
            used.retain(|u| files.contains(u) && u != file);
        }
    }
    for &(module, from, to) in ONE_UNIT {
        assert!(
            graphs[module][from].contains(to),
            "{module}: {from} no longer uses {to}"
        );
        graphs
            .get_mut(module)
            .unwrap()
            .get_mut(from)
            .unwrap()
            .remove(to);
    }
    let mut cycles: Vec<String> = Vec::new();
    for (module, g) in &graphs {
        let mut g = g.clone();
        while let Some(c) = cycle(&g) {
            cycles.push(format!("{module}: {}", c.join(" → ")));
            let (a, b) = (&c[0], &c[1 % c.len()]);
            g.get_mut(a).unwrap().remove(b);
        }
    }
    assert!(
        cycles.is_empty(),
        "files importing each other:\n{}",
        cycles.join("\n")
    );
    assert!(graphs["app"]["whatif"].contains("workload"));
}

#[test]
fn lower_floors_never_import_higher_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let test_only = test_only_files(&src, &files);
    let mut graph: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut renderers_used: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        if test_only.contains(relative) {
            continue;
        }
        let path = module_path(relative);
        let Some(top) = path.first().cloned() else {
            continue;
        };
        if top == "lib" || top == "main" || top == "bin" {
            continue;
        }
        if !is_top_level(&top) {
            problems.push(format!(
                "{}: module {top} is in no floor",
                relative.display()
            ));
            continue;
        }
        let code = without_tests(&std::fs::read_to_string(file).unwrap());
        for used in imports(&code, path.len()) {
            if used == top {
                continue;
            }
            graph
                .entry(top.clone())
                .or_default()
                .entry(used.clone())
                .or_default()
                .push(relative.display().to_string());
        }
        // Renderers: `<module>::table`, named from outside the app.
        if top != "app" {
            for m in ["explain", "plan", "lease", "compare", "suggest"] {
                let inside = top == m && path.get(1).is_none_or(|p| p != "table");
                let names_it = code.contains(&format!("crate::{m}::table"))
                    || (inside && code.contains("table::"));
                if names_it {
                    renderers_used.push(format!("{} uses {m}'s renderer", relative.display()));
                }
            }
        }
    }
    for (module, uses) in &graph {
        for (used, where_) in uses {
            let ok = match (floor(module), floor(used)) {
                _ if TOP.contains(&module.as_str()) => true,
                (Some(a), Some(b)) => b <= a,
                // An edge may use any pure floor; a pure floor never uses an edge or the top.
                (None, Some(_)) => EDGES.contains(&module.as_str()),
                _ => false,
            };
            if !ok {
                problems.push(format!("{module} imports {used} ({})", where_.join(", ")));
            }
            if graph.get(used).is_some_and(|u| u.contains_key(module)) && module < used {
                problems.push(format!("{module} and {used} import each other"));
            }
        }
    }
    problems.extend(renderers_used);
    assert!(
        problems.is_empty(),
        "floors broken:\n{}",
        problems.join("\n")
    );
    // The check sees what it checks: the framework uses the model, plugins the framework.
    assert!(graph["framework"].contains_key("model"));
    assert!(graph["plugins"].contains_key("framework"));
}

/// The reader of imports sees every way code names another module, and no comment or test.
#[test]
fn imports_are_read_in_every_form() {
    let code = without_tests(
        "use crate::model::pod::Pod;\nuse crate::{plugins::x, release};\nlet a = crate::dra::f();\n// crate::lease in a comment\nuse super::super::config::X;\nuse super::sibling;\n#[cfg(test)]\nmod tests {\n    use crate::explain;\n}\n",
    );
    assert_eq!(
        imports(&code, 2),
        ["config", "dra", "model", "plugins", "release"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        sibling_imports("use super::{a, b::c};\nuse crate::top::d;\n", "top"),
        ["a", "b", "d"].map(String::from).into()
    );
}
