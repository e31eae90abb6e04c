"""Declaration and import extraction per language: what a reader of the source map sees per file."""

from __future__ import annotations

import textwrap

import pytest

from gitpilot.context.decls import extract, import_region, imports, language_of, module_parts


def rendered(path: str, text: str) -> list[str]:
    return [e.render() for e in extract(path, textwrap.dedent(text))]


def test_python_classes_methods_functions_and_no_locals() -> None:
    out = rendered(
        "pkg/models.py",
        '''
        import os

        class Order(Base):
            """An order."""

            def __init__(self):
                def helper():
                    pass

            def total(self):
                return 1

            async def refresh(self):
                ...

            class Meta:
                def ordering(self):
                    pass

        if TYPE_CHECKING:
            def typed_only() -> None: ...

        def make_order():
            class Local:
                def hidden(self):
                    pass
            return Order()
    ''',
    )
    assert out == ["Order{total(), refresh()}", "Order.Meta{ordering()}", "typed_only()", "make_order()"]


def test_typescript_exports_interfaces_arrows_and_class_members() -> None:
    out = rendered(
        "web/widget.tsx",
        """
        import { x } from "./util";
        export interface Props { a: string }
        export type Id = string | number;
        export enum Color { Red, Green }
        export default class Widget extends Base<Props> {
          private state = 1;
          constructor(props: Props) {
            super(props);
          }
          async render(): Promise<void> {
            if (this.state) {
              doThing(1);
            }
          }
          static create<T>(x: T): Widget {
            return new Widget(x);
          }
        }
        export function helper(a, b) {
          function inner() {}
          return a + b;
        }
        export const handler = async (req: Req): Promise<Res> => {
          return x;
        };
        const notAFunction = 5;
    """,
    )
    assert out == ["Props", "Id", "Color", "Widget{render(), create()}", "helper()", "handler()"]


def test_go_functions_types_and_receiver_methods() -> None:
    out = rendered(
        "svc/server.go",
        """
        package svc

        type Server struct {
        \tInner struct {
        \t\tx int
        \t}
        }

        type (
        \tHandler func()
        \tOptions struct{}
        )

        func New(opts Options) *Server { return &Server{} }
        func (s *Server) Serve() error { return nil }
        func (s Server) close() {}
        func (l *List[T]) Push(v T) {}
    """,
    )
    assert out == ["Server{Serve(), close()}", "Handler", "Options", "New()", "List{Push()}"]


def test_rust_structs_traits_impls_merge_and_locals_dropped() -> None:
    out = rendered(
        "src/config.rs",
        """
        use crate::store::Db;
        pub struct Config {
            pub name: String,
        }
        pub enum Mode { A, B }
        pub trait Runner {
            fn run(&self) -> Result<()>;
            fn name(&self) -> &str { "x" }
        }
        impl Config {
            pub fn new() -> Self {
                fn local() {}
                Config { name: String::new() }
            }
            pub(crate) async fn load(path: &Path) -> Self { todo!() }
        }
        impl<T: Clone> Runner for Wrapper<T> {
            fn run(&self) -> Result<()> { Ok(()) }
        }
        pub fn main() {}
    """,
    )
    assert out == ["Config{new(), load()}", "Mode", "Runner{run(), name()}", "Wrapper{run()}", "main()"]


def test_java_classes_methods_nested_types_no_control_flow() -> None:
    out = rendered(
        "src/main/java/com/acme/OrderService.java",
        """
        package com.acme;
        import java.util.List;
        @Service
        public final class OrderService implements Service {
            private final Repo repo;
            public OrderService(Repo repo) {
                this.repo = repo;
            }
            @Override
            public List<Order> findAll(int limit) throws IOException {
                if (limit > 0) {
                    return repo.find(limit);
                } else if (limit < 0) {
                    throw new IllegalArgumentException();
                }
                return List.of();
            }
            private static <T> T pick(List<T> xs) {
                return xs.get(0);
            }
            public interface Listener {
                void onOrder(Order o);
            }
        }
    """,
    )
    assert out == ["OrderService{findAll(), pick()}", "OrderService.Listener{onOrder()}"]


def test_c_functions_k_and_r_style_structs_and_no_statements() -> None:
    out = rendered(
        "src/list.c",
        """
        #include "util/strbuf.h"
        struct node {
            int v;
        };
        static int
        compare_nodes(const void *a, const void *b)
        {
            if (a == b)
                return 0;
            return strcmp(a, b);
        }
        int main(int argc, char **argv) {
            while (1) { foo(1); }
            return 0;
        }
        int prototype_only(int x);
    """,
    )
    assert out == ["node", "compare_nodes()", "main()"]


def test_cpp_header_class_members_and_out_of_line_methods() -> None:
    header = rendered(
        "include/engine.hpp",
        """
        namespace app {
        class Engine : public Base {
        public:
            Engine();
            ~Engine();
            virtual void start() override;
            int count() const { return n_; }
            static Engine* instance();
        private:
            int n_;
        };
        void free_function(int x);
        }
    """,
    )
    assert header == ["Engine{start(), count(), instance()}", "free_function()"]
    source = rendered(
        "src/engine.cc",
        """
        Engine::Engine() : n_(0) {}
        void Engine::start() {
            for (int i = 0; i < n_; ++i) {
                step(i);
            }
        }
        static void helper() {}
    """,
    )
    assert source == ["Engine{start()}", "helper()"]


def test_ruby_modules_classes_and_methods() -> None:
    out = rendered(
        "lib/billing/invoice.rb",
        """
        module Billing
          class Invoice < Base
            def initialize(x)
              @x = x
            end
            def total
              items.sum { |i| i.price }
            end
            def self.build(h)
              new(h)
            end
            def paid?
              true
            end
          end
        end
        def top_level
        end
    """,
    )
    assert out == ["Billing", "Billing.Invoice{initialize(), total(), build(), paid?()}", "top_level()"]


@pytest.mark.parametrize(
    "path, lang",
    [
        ("a.py", "python"),
        ("a.tsx", "js"),
        ("a.mjs", "js"),
        ("a.go", "go"),
        ("a.rs", "rust"),
        ("A.java", "java"),
        ("a.h", "c"),
        ("a.cpp", "cpp"),
        ("a.rb", "ruby"),
        ("README.md", None),
        ("Makefile", None),
        ("dir.py/x", None),
    ],
)
def test_language_by_extension(path: str, lang: str | None) -> None:
    assert language_of(path) == lang


def test_imports_as_path_components() -> None:
    py = "from .models import Order, Item\nfrom ..core import engine\nimport os, sys as system\n"
    assert imports("pkg/sub/views.py", py) == [
        ("pkg", "sub", "models"),
        ("pkg", "sub", "models", "Order"),
        ("pkg", "sub", "models", "Item"),
        ("pkg", "core"),
        ("pkg", "core", "engine"),
        ("os",),
        ("sys",),
    ]
    js = 'import { x } from "./util";\nconst y = require("../lib/y.js");\nimport React from "react";\n'
    assert imports("web/src/app.ts", js) == [("web", "src", "util"), ("web", "lib", "y"), ("react",)]
    go = 'import (\n\t"fmt"\n\t"github.com/acme/mono/services/order"\n)\n'
    assert imports("cmd/main.go", go) == [("fmt",), ("github.com", "acme", "mono", "services", "order")]
    assert imports("src/lib.rs", "use crate::store::Db;\nmod parser;\n") == [
        ("store",),
        ("store", "Db"),
        ("src", "parser"),
    ]
    assert imports("a/B.java", "import com.acme.util.Strings;\n") == [("com", "acme", "util", "Strings")]
    assert imports("src/x.c", '#include "util/strbuf.h"\n#include <stdio.h>\n') == [
        ("util", "strbuf"),
        ("stdio",),
    ]
    assert imports("lib/a.rb", "require 'json'\nrequire_relative '../lib/store'\n") == [
        ("json",),
        ("lib", "store"),
    ]


def test_module_parts_for_packages() -> None:
    assert module_parts("src/pkg/__init__.py") == ("src", "pkg")
    assert module_parts("web/components/index.ts") == ("web", "components")
    assert module_parts("services/order/handler.go") == ("services", "order")
    assert module_parts("src/parser/mod.rs") == ("src", "parser")
    assert module_parts("src/pkg/mod.py") == ("src", "pkg", "mod")


def test_import_region_stops_after_the_last_import_line() -> None:
    head = b"import os\nimport sys\n\n\ndef f():\n    return 1\n" + b"x = 1\n" * 100
    assert import_region("a.py", head) == b"import os\nimport sys\n"
    assert import_region("a.py", b"def f():\n    pass\n") == b""
