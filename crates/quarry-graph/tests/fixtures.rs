//! The import edges of the small repositories under `fixtures/graph/<family>/`, and
//! how many imports of each are external.

use std::fs;
use std::path::{Path, PathBuf};

use quarry_graph::{FileGraph, GraphBuilder};

fn fixture(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/graph")
        .join(family)
}

/// Every file below `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The graph of a fixture, its files added by absolute path.
fn build(family: &str, configure: impl FnOnce(&mut GraphBuilder)) -> FileGraph {
    build_in_order(family, configure, files(&fixture(family)))
}

fn build_in_order(
    family: &str,
    configure: impl FnOnce(&mut GraphBuilder),
    paths: Vec<PathBuf>,
) -> FileGraph {
    let root = fixture(family);
    let mut builder = GraphBuilder::new(&root);
    configure(&mut builder);
    for path in paths {
        builder.add_file(&path, &fs::read(&path).unwrap()).unwrap();
    }
    builder.build()
}

/// Checks the edges (one `from -> to` per line) and the external count.
#[track_caller]
fn check(graph: &FileGraph, expected_edges: &str, externals: usize) {
    let edges: Vec<String> = graph
        .edges()
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect();
    let expected: Vec<&str> = expected_edges
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(edges, expected, "edges");
    assert_eq!(graph.external_count(), externals, "external imports");
}

/// [`check`] on the graph of fixture `family` as it is, with no configuration.
#[track_caller]
fn check_family(family: &str, expected_edges: &str, externals: usize) {
    check(&build(family, |_| {}), expected_edges, externals);
}

#[test]
fn the_order_files_are_added_in_changes_nothing() {
    let sorted = build("python", |_| {});
    let mut paths = files(&fixture("python"));
    paths.reverse();
    let reversed = build_in_order("python", |_| {}, paths);
    assert!(sorted.files().eq(reversed.files()));
    assert!(sorted.edges().eq(reversed.edges()));
    let config = quarry_graph::PageRankConfig::default();
    assert_eq!(sorted.rank(&config), reversed.rank(&config));
}

#[test]
fn rust() {
    let graph = build("rust", |_| {});
    // The edges the PageRank reference (fixtures/graph/pagerank_reference.py) is built on.
    let edges = include_str!("../../../fixtures/graph/rust_edges.txt");
    // std (12 paths), serde (4), clap.
    check(&graph, edges, 19);
    // `use super::*` in `mod tests` is the file itself, and so is `use Unit::*` (its
    // own enum): resolved, not edges.
    let item = graph.key("src/model/item.rs").unwrap();
    assert_eq!(graph.externals_of(&item), Some(2));
    // `use metrics::Counter` (a module declared in a macro call, with `#[path]`)
    // resolves to lib.rs itself.
    let lib = graph.key("src/lib.rs").unwrap();
    assert_eq!(graph.externals_of(&lib), Some(1));
}

#[test]
fn python() {
    check_family(
        "python",
        "
        scripts/seed.py -> scripts/helpers.py
        scripts/seed.py -> shop/cart.py
        shop/__init__.py -> shop/cart.py
        shop/api/__init__.py -> shop/api/routes.py
        shop/api/__init__.py -> shop/cart.py
        shop/api/routes.py -> shop/discounts.py
        shop/api/routes.py -> shop/pricing.py
        shop/api/routes.py -> shop/utils/__init__.py
        shop/cart.py -> shop/discounts.py
        shop/cart.py -> shop/pricing.py
        shop/discounts.py -> shop/utils/money.py
        shop/pricing.py -> shop/utils/money.py
        tests/test_cart.py -> shop/cart.py
        tests/test_cart.py -> src/ledger/book.py
        ",
        // typing, requests ×2, decimal, os.path, json, dataclasses, pytest.
        8,
    );
}

#[test]
fn javascript_and_typescript() {
    check_family(
        "js",
        "
        lib/lazy.mjs -> lib/legacy.js
        lib/legacy.js -> lib/config.json
        lib/legacy.js -> lib/lazy.mjs
        lib/legacy.js -> src/utils/format.ts
        src/app.tsx -> src/models/item.ts
        src/app.tsx -> src/styles.css
        src/app.tsx -> src/utils/format.ts
        src/index.ts -> src/app.tsx
        src/index.ts -> src/models/index.ts
        src/models/cart.ts -> src/models/item.ts
        src/models/index.ts -> src/models/cart.ts
        src/models/index.ts -> src/models/item.ts
        ",
        // react ×2, zod, lodash, node:path.
        5,
    );
}

#[test]
fn go() {
    check_family(
        "go",
        "
        cmd/shop/main.go -> internal/cart/cart.go
        cmd/shop/main.go -> internal/cart/discount.go
        cmd/shop/main.go -> pkg/money/format.go
        cmd/shop/main.go -> pkg/money/money.go
        internal/cart/cart.go -> pkg/money/format.go
        internal/cart/cart.go -> pkg/money/money.go
        internal/cart/cart_test.go -> internal/cart/cart.go
        internal/cart/cart_test.go -> internal/cart/discount.go
        internal/cart/discount.go -> pkg/money/format.go
        internal/cart/discount.go -> pkg/money/money.go
        tools/gen/main.go -> pkg/money/format.go
        tools/gen/main.go -> pkg/money/money.go
        tools/gen/main.go -> tools/internal/tmpl/tmpl.go
        ",
        // fmt ×3, errors, testing, math, strings, os, io.
        9,
    );
}

#[test]
fn java_kotlin_scala() {
    check_family(
        "jvm",
        "
        src/main/java/com/acme/shop/Shop.java -> src/main/java/com/acme/shop/model/Item.java
        src/main/java/com/acme/shop/Shop.java -> src/main/java/com/acme/shop/util/Money.java
        src/main/java/com/acme/shop/Shop.java -> src/main/kotlin/com/acme/shop/model/Cart.kt
        src/main/java/com/acme/shop/model/Item.java -> src/main/java/com/acme/shop/util/Money.java
        src/main/kotlin/com/acme/shop/model/Cart.kt -> src/main/java/com/acme/shop/util/Money.java
        src/main/kotlin/com/acme/shop/model/Cart.kt -> src/main/kotlin/com/acme/shop/util/Prices.kt
        src/main/scala/com/acme/report/Report.scala -> src/main/java/com/acme/shop/model/Item.java
        src/main/scala/com/acme/report/Report.scala -> src/main/java/com/acme/shop/util/Money.java
        src/main/scala/com/acme/report/Report.scala -> src/main/kotlin/com/acme/shop/model/Cart.kt
        src/main/scala/com/acme/report/Report.scala -> src/main/kotlin/com/acme/shop/util/Prices.kt
        src/test/java/com/acme/shop/ShopTest.java -> src/main/scala/com/acme/report/Report.scala
        ",
        // java.util.List, kotlinx…Flow, java.math.BigDecimal, scala…mutable, junit.
        5,
    );
}

#[test]
fn csharp() {
    check_family(
        "csharp",
        "
        src/Shop/Models/Item.cs -> src/Shop/Util/Formatting.cs
        src/Shop/Models/Item.cs -> src/Shop/Util/Money.cs
        src/Shop/Program.cs -> src/Shop/Models/Cart.cs
        src/Shop/Program.cs -> src/Shop/Models/Item.cs
        src/Shop/Program.cs -> src/Shop/Util/Formatting.cs
        src/Shop/Program.cs -> src/Shop/Util/Money.cs
        ",
        // System, System.Collections.Generic, System.Linq, System.Globalization.
        4,
    );
}

const C_EDGES: &str = "
    include/shop/cart.h -> include/shop/item.h
    src/cart.c -> include/shop/cart.h
    src/cart.c -> src/internal.h
    src/internal.h -> config.h
    src/internal.h -> include/shop/item.h
    src/item.cpp -> config.h
    src/item.cpp -> include/shop/item.h
    src/parser.cc -> include/shop/cart.h
    src/parser.cc -> vendor/json/json.hpp
    tests/test_cart.c -> include/shop/cart.h
    tests/test_cart.c -> src/internal.h
";

#[test]
fn c_and_cpp() {
    let graph = build("c", |builder| {
        builder.include_dir("vendor/json").unwrap();
    });
    // stddef.h, stdint.h, stdlib.h, <string> ×2, <vector>, assert.h.
    check(&graph, C_EDGES, 7);
}

#[test]
fn c_without_the_vendor_include_dir() {
    let graph = build("c", |_| {});
    let edges = C_EDGES.replace("src/parser.cc -> vendor/json/json.hpp", "");
    check(&graph, &edges, 8);
}

#[test]
fn c_includes_written_from_a_source_root() {
    // protobuf's headers are included from `src/` (`-Isrc`), which no rule names: two
    // includes explain it, and then it serves as an include directory for every include
    // (`config.h`). One include under `third_party/x` is too little to say so.
    check_family(
        "cpp-roots",
        "
        src/google/protobuf/message.cc -> src/config.h
        src/google/protobuf/message.cc -> src/google/protobuf/message.h
        src/google/protobuf/message.cc -> src/google/protobuf/port.h
        src/google/protobuf/message.h -> src/google/protobuf/port.h
        ",
        // <string>, and `lone/thing.h`.
        2,
    );
}

#[test]
fn ruby() {
    check_family(
        "ruby",
        "
        Rakefile -> tasks/release.rake
        bin/console -> lib/shop.rb
        lib/shop.rb -> lib/shop/cart.rb
        lib/shop.rb -> lib/shop/version.rb
        lib/shop/cart.rb -> lib/shop/item.rb
        lib/shop/cart.rb -> lib/shop/pricing.rb
        tasks/release.rake -> lib/shop/version.rb
        test/cart_test.rb -> lib/shop/cart.rb
        test/cart_test.rb -> test/test_helper.rb
        test/test_helper.rb -> lib/shop.rb
        ",
        // json, bigdecimal, irb, rake/testtask, minitest/autorun; not the computed path.
        5,
    );
}

#[test]
fn php() {
    check_family(
        "php",
        "
        public/index.php -> config.php
        public/index.php -> src/Cart.php
        public/index.php -> src/Model/Item.php
        public/index.php -> src/Model/Price.php
        public/index.php -> vendor/autoload.php
        src/Cart.php -> src/Model/Item.php
        src/Cart.php -> src/helpers.php
        src/Model/Item.php -> src/helpers.php
        templates/cart.php -> templates/partials/header.php
        ",
        // Psr\\Log\\LoggerInterface; not `require $file` or `include $footer`.
        1,
    );
}

#[test]
fn lua() {
    check_family(
        "lua",
        "
        main.lua -> config.lua
        main.lua -> src/shop/cart.lua
        spec/cart_spec.lua -> src/shop/cart.lua
        src/shop/cart.lua -> src/shop/item.lua
        src/shop/cart.lua -> src/shop/util/init.lua
        src/shop/util/init.lua -> src/shop/util/strings.lua
        ",
        // cjson, utf8, busted.runner.
        3,
    );
}

#[test]
fn elixir() {
    check_family(
        "elixir",
        "
        lib/shop.ex -> lib/shop/cart.ex
        lib/shop.ex -> lib/shop/item.ex
        lib/shop/cart.ex -> lib/shop/item.ex
        lib/shop/cart.ex -> lib/shop/pricing.ex
        test/shop/cart_test.exs -> lib/shop/cart.ex
        test/shop/cart_test.exs -> test/test_helper.exs
        ",
        // Mix.Project, Logger, Ecto.Schema, Decimal, ExUnit.Case.
        5,
    );
}

#[test]
fn haskell_zig_bash_swift() {
    check_family(
        "other",
        "
        bash/deploy.sh -> bash/lib/common.sh
        bash/deploy.sh -> bash/lib/env.sh
        bash/lib/common.sh -> bash/lib/env.sh
        haskell/app/Main.hs -> haskell/src/Shop/Cart.hs
        haskell/app/Main.hs -> haskell/src/Shop/Item.hs
        haskell/src/Shop/Cart.hs -> haskell/src/Shop/Item.hs
        swift/Sources/ShopCLI/main.swift -> swift/Sources/Shop/Cart.swift
        swift/Sources/ShopCLI/main.swift -> swift/Sources/Shop/Item.swift
        swift/Tests/ShopTests/CartTests.swift -> swift/Sources/Shop/Cart.swift
        swift/Tests/ShopTests/CartTests.swift -> swift/Sources/Shop/Item.swift
        zig/src/cart.zig -> zig/src/model/item.zig
        zig/src/main.zig -> zig/src/cart.zig
        ",
        // Data.Map.Strict, std, PackageDescription, Foundation, ArgumentParser, XCTest;
        // not `. \"$HOME/.deployrc\"`.
        6,
    );
}
