"""The capsule's speed caches are only ever faster: a reused statistic, map or search result is
exactly what a fresh build computes, an edited file's new content is used, and the same inputs
give the same bytes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import capsule_text, forget_capsules, git, make_repo, run_pilot

FILES = {
    "AGENTS.md": "# Guide\n\nUse tabs.\n",
    "docs/guide.md": "# Guide\n\n## Adding a parser\n\nParsers live in `src/parse.py`.\n",
    "src/parse.py": "def parse_config():\n    pass\n",
}
TASK = "Add a parser for the `parse_config` settings"


def test_a_symlink_whose_target_ends_in_a_newline_does_not_stop_the_express_path(tmp_path: Path) -> None:
    from gitpilot.context import stamp

    root = make_repo(tmp_path / "repo", FILES)
    # As in real repositories: a link written with `echo path > file` and committed as a symlink.
    os.symlink("docs/guide.md\n", root / "README.md")
    git(root, "add", "README.md")
    git(root, "commit", "-qm", "readme link")
    first = run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
    time.sleep(stamp.RACY_NS / 1e9 + 0.2)  # out of the racy window: the next check writes signatures
    assert run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout == first
    hit = stamp.express(str(root), TASK)
    assert hit is not None and hit.body.decode("utf-8") == first
    (root / "docs" / "guide.md").write_text(FILES["docs/guide.md"] + "\nParsers are registered.\n")
    assert stamp.express(str(root), TASK) is None
    assert "Parsers are registered." in run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout


# --- signals from postings: the same numbers as the definition, section by section ----------------

DOCS = {
    "docs/providers/minimax.md": "---\ntitle: MiniMax provider\ndescription: Video models and the url option\n---\n"
    "# MiniMax\n\nThe MiniMax provider makes video.\n\n## Video models\n\nCall `getFromApi` to fetch the url.\n\n"
    "### Download the video\n\nThe url expires; download the video bytes.\n\n## Settings\n\nSet `baseURL`.\n",
    "docs/guide.md": "Intro text before any heading, about video.\n\n# Guide\n\n## Providers\n\n### Video providers\n\n"
    "#### MiniMax video\n\nSee the MiniMax page. task.content.url holds the link.\n\n## Testing\n\nRun the tests.\n",
    "CONTRIBUTING.md": "# Contributing\n\n## Tests\n\nWrite a test for every provider change.\n\n"
    "## Changesets\n\nAdd a changeset.\n",
    "packages/other/README.md": "# Other\n\nNothing about the task here.\n\n## Usage\n\nImport it.\n",
    "CHANGELOG.md": "# Changelog\n\n## 2.1.0\n\n- MiniMax video: download the video when the url expires; "
    "`getFromApi` keeps `baseURL` and task.content.url; tests for the video url download.\n\n"
    "## 2.0.0\n\n- Video providers.\n",
}


def _dense_signals(docs, weights, ids, conventions, area, area_files, quotable=None, head=True):  # type: ignore[no-untyped-def]
    """The signals as first defined: every section of every document walked (the reference).
    A section's word signals are divided by the best section of the ``quotable`` documents (all
    when None), at most 1, and are zero in a document neither quotable nor stating a convention."""
    from gitpilot.context import features as F
    from gitpilot.context.sources import matches

    wset = set(weights)
    heading_bags, heading_lens, body_bags, body_lens = [], [], [], []
    sec_bags, sec_lens, head_bags, head_lens = [], [], [], []
    for doc in docs:
        dt = doc.terms
        heads: dict[str, int] = {}
        for toks in dt.headings:
            for t in toks:
                heads[t] = heads.get(t, 0) + 1
        for t in F.tokens(doc.front.text):
            heads[t] = heads.get(t, 0) + 2
        heading_lens.append(sum(heads.values()))
        heads = {t: n for t, n in heads.items() if t in wset}
        heading_bags.append(heads)
        body = dict(heads)
        paths: list[dict[str, int]] = []
        plens: list[int] = []
        for pos in range(len(doc.smap.sections)):
            counts = dt.section_counts(pos)
            hit = sorted(counts.keys() & wset)
            for t in hit:
                body[t] = body.get(t, 0) + counts[t]
            parent = doc.smap.sections[pos].parent
            own = dt.headings[pos]
            path_heads = dict(paths[parent]) if parent is not None else {}
            for t in own:
                if t in wset:
                    path_heads[t] = path_heads.get(t, 0) + 1
            plen = (plens[parent] if parent is not None else 0) + len(own)
            paths.append(path_heads)
            plens.append(plen)
            bag = {t: counts[t] for t in hit}
            for t, n in path_heads.items():
                bag[t] = bag.get(t, 0) + n
            sec_bags.append(bag)
            sec_lens.append(dt.lengths[pos] + plen)
        head_bags.extend(paths)
        head_lens.extend(plens)
        body_bags.append(body)
        body_lens.append(sum(dt.lengths) + heading_lens[-1])
    path_bags = [F._counts(F.path_words(d.path)) for d in docs]
    path_df: dict[str, int] = {}
    for bag in path_bags:
        for t in bag:
            path_df[t] = path_df.get(t, 0) + 1
    unlinked = sum(1 for d in docs if not d.linked) / len(docs)
    m_body = F._Bm25.over(weights, body_bags, body_lens)
    m_head = F._Bm25.over(weights, heading_bags, heading_lens)
    m_path = F._Bm25.over(weights, path_bags, [sum(p.values()) for p in path_bags], b=F.PATH_B)
    m_sec = F._Bm25.over(weights, sec_bags, sec_lens)
    m_shead = F._Bm25.over(weights, head_bags, head_lens)
    rx = [i.regex() for i in ids]
    out = []
    k = 0
    for d, doc in enumerate(docs):
        found = F._id_lines(doc, ids, rx) if ids else []
        values = {
            "bm25": m_body.score(body_bags[d], body_lens[d]),
            "heads": m_head.score(heading_bags[d], heading_lens[d]),
            "path": 0.0 if doc.nested else m_path.score(path_bags[d], sum(path_bags[d].values())),
            "dir": F._dir_share(doc.path, weights, path_df, len(docs)),  # from the paths alone, no postings
            "ids": sum(1 for f in found if f) / len(ids) if ids else 0.0,
            "linked": unlinked if doc.linked else 0.0,
            "area": F._area_of(doc.path, area),
            "scoped": 1.0 if doc.front.scoped else 0.0,
            "applies": 1.0 if doc.front.scoped and any(matches(f, doc.front.scopes) for f in area_files) else 0.0,
        }
        for kind in F.KINDS:
            values[f"kind:{kind}"] = 1.0 if doc.kind == kind else 0.0
        secs = []
        conv = conventions.get(d, ())
        for pos, sec in enumerate(doc.smap.sections):
            row = {
                "s_bm25": m_sec.score(sec_bags[k], sec_lens[k]) if sec_bags[k] else 0.0,
                "s_head": m_shead.score(head_bags[k], head_lens[k]) if head_bags[k] else 0.0,
                "s_ids": (sum(1 for f in found if any(sec.start <= n <= sec.body_end for n in f)) / len(ids))
                if ids else 0.0,
            }
            k += 1
            name, prior = conv[pos] if pos < len(conv) else ("", 0.0)
            for c in F.CONVENTIONS:
                row[f"c_{c}"] = prior if name == c else 0.0
            secs.append(row)
        out.append((values, secs))
    rows = [v for v, _ in out]
    for key, model in (("bm25", m_body), ("heads", m_head), ("path", m_path)):
        F._normalize(rows, key, F.NORM_FLOOR * model.mass())
    quotable = set(range(len(docs)) if quotable is None else quotable)
    wanted = quotable | {d for d, table in conventions.items()
                         if any(prior != 0 and name in F.CONVENTIONS for name, prior in table)}
    for d, (_, secs) in enumerate(out):
        for r in secs:
            if d not in wanted:
                r["s_bm25"] = r["s_head"] = 0.0
            if not head:
                r["s_head"] = 0.0
    for key, model in (("s_bm25", m_sec), ("s_head", m_shead)):
        best = max(max((r[key] for d in quotable for r in out[d][1]), default=0.0), F.NORM_FLOOR * model.mass())
        for d in wanted:
            for r in out[d][1]:
                r[key] = min(r[key] / best, 1.0) if best > 0 else r[key]
    return out, (heading_bags, body_bags, sec_bags, head_bags)


def _docs(files: dict[str, str]) -> list:  # type: ignore[type-arg]
    from gitpilot.context import frontmatter
    from gitpilot.context.doctypes import kind_of
    from gitpilot.context.features import Doc
    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.context.terms import DocTerms, compute

    docs = []
    for path, text in sorted(files.items()):
        lines = split_lines(text)
        smap = parse(text, None, lines)
        terms = DocTerms.from_bytes(compute(smap, lines).to_bytes())  # as read back from the cache
        assert terms is not None
        docs.append(Doc(path, smap, lines, rule=path == "CONTRIBUTING.md", kind=kind_of(path, False),
                        front=frontmatter.parse(lines), terms=terms))
    return docs


def test_signals_from_postings_are_the_defined_signals_exactly() -> None:
    docs = _docs(DOCS)
    for task in (
        "The MiniMax video url expires: download the video with `getFromApi`, keep `baseURL` and "
        "task.content.url working, and add tests",
        "Providers: video providers need a guide",
        "nothing matches zzz",
    ):
        _same_as_defined(docs, task)


def test_signals_from_postings_on_many_generated_documents() -> None:
    import random

    rng = random.Random(12)
    words = ("video provider model stream download url token cache retry error test guide option "
             "setting request response client server parser config schema build release").split()
    files = {}
    for n in range(25):
        out = []
        if rng.random() < 0.3:
            out.append(f"---\ntitle: {' '.join(rng.sample(words, 2))}\n---\n")
        for _ in range(rng.randint(1, 14)):
            level = rng.randint(1, 4)
            out.append("#" * level + " " + " ".join(rng.sample(words, rng.randint(1, 3))) + "\n\n")
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 40))) + "\n\n")
        files[f"docs/{rng.choice(words)}/page{n}.md"] = "".join(out)
    docs = _docs(files)
    for _ in range(8):
        _same_as_defined(docs, " ".join(rng.sample(words, rng.randint(2, 9))) + " `cache_token`")


def _same_as_defined(docs: list, task: str) -> None:  # type: ignore[type-arg]
    from gitpilot.context import weights as W
    from gitpilot.context.conventions import convention_priors
    from gitpilot.context.features import _Matches, signals
    from gitpilot.context.query import query_weights
    from gitpilot.context.select import Ranking
    from gitpilot.context.text import identifiers

    weights, ids = query_weights(task), identifiers(task)
    priors, _ = convention_priors(docs, task)
    got = signals(docs, weights, ids, priors, {"docs/providers": 0.5}, ["docs/providers/minimax.md"])
    got.fill_sections(range(len(docs)), range(len(docs)))
    want, bags = _dense_signals(docs, weights, ids, priors, {"docs/providers": 0.5},
                                ["docs/providers/minimax.md"])
    assert [(g.values, g.sections) for g in got] == want
    # the counts in the same order too: a float sum in another order may round otherwise
    heading_bags, body_bags, sec_bags, head_bags = bags
    k = 0
    for d, doc in enumerate(docs):
        assert doc.terms is not None
        m = _Matches(doc, doc.terms, weights)
        assert list(m.heads.items()) == list(heading_bags[d].items())
        assert list(m.body.items()) == list(body_bags[d].items())
        got_bags = m.bags()
        for pos in range(len(doc.smap.sections)):
            assert list(got_bags.get(pos, {}).items()) == list(sec_bags[k].items())
            assert list(m.paths.get(pos, {}).items()) == list(head_bags[k].items())
            k += 1
    # a capsule scales the sections by the documents it can quote (a positive score) alone
    ranking = Ranking(docs, task, {})
    plain, _ = _dense_signals(docs, weights, ids, priors, {}, [])  # (Ranking is given no area)
    quotable = [d for d, (v, _secs) in enumerate(plain) if W.doc_score(v) > 0]
    scaled, _ = _dense_signals(docs, weights, ids, priors, {}, [], quotable, head=bool(W.SECTION.get("s_head")))
    assert list(ranking.sec_scores) == [[W.section_score(r) for r in secs] for _v, secs in scaled]
    if task.startswith("The MiniMax"):  # the case exercises every kind of section signal
        rows = [r for _v, secs in want for r in secs]
        for key in ("s_bm25", "s_head", "s_ids", "c_testing"):
            assert any(r[key] > 0 for r in rows), key
        # the change log's entries hold the task's words best, yet it is never quoted: it sets
        # no scale, and its sections are not scored
        log = next(d for d, doc in enumerate(docs) if doc.path == "CHANGELOG.md")
        assert log not in quotable and max(r["s_bm25"] for r in want[log][1]) == 1.0
        assert all(r["s_bm25"] == 0.0 for r in scaled[log][1])
        assert max(r["s_bm25"] for d in quotable for r in scaled[d][1]) == 1.0
        assert max(r["s_bm25"] for d in quotable for r in want[d][1]) < 1.0


# --- the names of a task, searched for in one git grep -------------------------------------------


def test_one_search_for_every_name_finds_what_a_search_a_name_finds(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gitpilot.context import area

    files = {
        "src/parse.py": "def parse_config():\n    return fooBar + 1\n",
        "src/both.py": "fooBarbaz = parse_config\n",  # fooBar and Barbaz overlap: each is found alone
        "src/only_barbaz.py": "x = Barbaz\n",
        "src/dé/naïve.py": "parse_config()\nfooBarbaz\n",  # git quotes this name: as it did before
        "src/a:b.py": "getFromApi()\n",
        "src/bin.dat": "parse_config\0binary\n",
        "lib/other.ts": "const MiniMax = getFromApi;\n",
    }
    root = make_repo(tmp_path / "repo", files)
    names = ["parse_config", "fooBar", "Barbaz", "getFromApi", "MiniMax", "nowhere"]
    assert area.overlaps(names)["fooBar"] == ["Barbaz"] and "MiniMax" not in area.overlaps(names)
    code = sorted(files)

    def one_by_one() -> dict[str, list[str]]:
        out = {}
        for n in names:
            got = git(root, "grep", "-l", "-I", "-F", "-e", n, "--", *code, check=False)
            out[n] = sorted(p for p in got.split("\n") if p)
        return out

    want = one_by_one()
    assert "\"src/d\\303\\251/na\\303\\257ve.py\"" in want["Barbaz"] and "src/both.py" in want["Barbaz"]
    assert area.Search(root, code, names).result() == want
    monkeypatch.setattr(area, "MAX_ARG_BYTES", 40)  # one git grep a file or two: the chunks add up
    assert area.Search(root, code, names).result() == want
    # unstaged edits and a deletion: the index's content is what is searched, in chunks or not
    (root / "src" / "only_barbaz.py").write_text("x = parse_config\n")
    (root / "src" / "both.py").write_text("fooBar = 1\n")  # fooBar kept, Barbaz gone: found again alone
    (root / "src" / "a:b.py").write_text("nothing\n")  # a name with a colon is searched alone
    (root / "lib" / "other.ts").unlink()
    assert area.Search(root, code, names).result() == want
    monkeypatch.setattr(area, "MAX_ARG_BYTES", 4096)
    assert area.Search(root, code, names).result() == want
    git(root, "add", "-A")  # staged: now the index holds them
    staged = one_by_one()
    assert staged != want and staged["Barbaz"] == ['"src/d\\303\\251/na\\303\\257ve.py"']
    assert area.Search(root, code, names).result() == staged


def test_the_names_searched_within_a_few_directories_are_found_in_the_code_files_alone(tmp_path: Path) -> None:
    from gitpilot.context import area
    from gitpilot.redact import is_credential_filename

    code_text = {
        "src/parse.py": "def parse_config():\n    return fooBar + 1\n",
        "src/both.py": "fooBarbaz = parse_config\n",
        "src/dé/naïve.py": "parse_config()\nfooBarbaz\n",  # quoted by git
        "src/a:b.py": "getFromApi()\n",
        "lib/deep/er/other.ts": "const MiniMax = getFromApi;\n",
        "lib/deep/plain.ts": "x\n",
        "main.py": "MiniMax\n",
    }
    # every name, also in files that are not code (tests, docs, examples, a credential-named file,
    # a quoted name), inside the directories the search is given and beside them
    other = {
        "src/tests/test_parse.py": "parse_config fooBar Barbaz getFromApi MiniMax\n",
        "src/dé/tests/tëst.py": "parse_config fooBarbaz\n",
        "lib/deep/er/examples/x.ts": "MiniMax getFromApi\n",
        "docs/guide.md": "parse_config MiniMax\n",
        "src/README.md": "fooBar getFromApi\n",
        ".env": "MiniMax\n",
        "tests/t.py": "Barbaz\n",
    }
    root = make_repo(tmp_path / "repo", {**code_text, **other})
    names = ["parse_config", "fooBar", "Barbaz", "getFromApi", "MiniMax", "nowhere"]
    paths = sorted({**code_text, **other})
    code = area.code_files(paths, is_credential_filename)
    assert code == sorted(code_text)
    want = area.Search(root, code, names).result()  # each code file named to git
    assert want["MiniMax"] == ["lib/deep/er/other.ts", "main.py"]
    assert "\"src/d\\303\\251/na\\303\\257ve.py\"" in want["fooBar"]
    for limit in (1, 2, 3, 4, 64):
        within = area.covering(paths, code, limit)
        assert area._covers(within, code) and len(within) <= max(limit, 1) or within == ["."]
        assert area.Search(root, code, names, within).result() == want, (limit, within)
    assert area.covering(paths, code, 64) == ["lib/deep/er/other.ts", "lib/deep/plain.ts", "main.py", "src/a:b.py",
                                              "src/both.py", "src/dé/naïve.py", "src/parse.py"]
    assert area.covering(paths, code, 3) == ["lib/deep", "main.py", "src"]  # (lib holds only lib/deep)
    assert area.covering(paths, code, 2) == ["."]
    assert not area._covers(["lib", "src"], code)  # main.py: a record with these is not used


def test_no_pathspec_of_the_names_search_holds_a_credential_named_file() -> None:
    """git grep opens every file its pathspecs hold: a directory above a credential-named file is
    split down to the entries that hold code, even past the limit, and the whole tree ("." when
    the top level alone holds more than the limit) is never searched when one is tracked."""
    from gitpilot.context import area

    code = [f"app/m{i}/mod.py" for i in range(10)] + ["app/main.py", "lib/a.py", "lib/b.py"]
    creds = ["app/.env", "app/m3/id_rsa"]
    paths = sorted(code + creds + ["app/README.md", "lib/README.md"])
    app = sorted([f"app/m{i}" for i in range(10) if i != 3] + ["app/m3/mod.py", "app/main.py"])
    assert area.covering(paths, code, 4) == ["app", "lib/a.py", "lib/b.py"]  # without them: app whole
    within = area.covering(paths, code, 4, never=creds)
    assert within == app + ["lib/a.py", "lib/b.py"]
    assert area._covers(within, code)
    held = [p for p in paths if any(p == w or p.startswith(w + "/") for w in within)]
    assert not set(held) & set(creds)
    # the top level alone past the limit: "." without a credential file, its entries with one
    assert area.covering(paths + [".env"], code, 1) == ["."]
    assert area.covering(paths + [".env"], code, 1, never=[".env"]) == ["app", "lib"]
    assert area.covering(paths, code, 1, never=creds) == app + ["lib"]


# --- identifiers found by their lower-case text, checked by their pattern -----------------------


def test_identifier_lines_are_the_lines_the_pattern_matches() -> None:
    from bisect import bisect_right

    from gitpilot.context.features import Doc, _id_lines
    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.context.text import identifiers

    texts = [
        "# Url\n\nThe URL and the url; not urls or curl.\r\nA baseURL, BASEURL, rebaseURL.\n",
        "task.content.url here\rand TASK.CONTENT.URL there, not task.content.urls\n",
        "a.a.a.a and x a.a\n\nMiniMax minimax MINIMAX_ok\n",
        "Ünïcode café: the url and getFromApi() — GETFROMAPI too\n",
        "ſhort: the Kelvin \u212a\nand maſk\n\u0130d here\nurl, id\n",  # the folding characters
        "no newline at the end: url",
        # beyond ASCII without the folding characters: 2-, 3- and 4-byte characters before the
        # names, letters that make a name part of a longer word (\u00ffurl), a capital whose
        # lower case is longer in UTF-8 (\u023a), other line breaks
        "\u023a big url \u2014 \u00ffurl \U0001f600 url\nline two: getFromApi\u00a0url\n\U0001f600\U0001f600 baseURL\n",
        "\u00e9\n" * 3 + "x \u2014 MINIMAX \u0438 url\r\n\u0442\u0435\u043a\u0441\u0442 URL\u2028url\nCaf\u00e9 CAF\u00c9\n",
        "url and \u00e9url \u00e9 url \u00e9URL\n",
    ]
    task = ("Fix the `url`, `baseURL`, `task.content.url`, `a.a`, `MiniMax`, `getFromApi()`, `mask`, "
            "`id` and `cafe` handling (Phase 2)")
    ids = identifiers(task)
    rx = [i.regex() for i in ids]
    for text in texts:
        lines = split_lines(text)
        doc = Doc("docs/x.md", parse(text, None, lines), lines)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        # as defined: a document whose lower-case text lacks the name's is not searched
        want = [sorted({bisect_right(starts, m.start()) for m in p.finditer(text)})
                if i.text.lower() in text.lower() else [] for i, p in zip(ids, rx, strict=True)]
        assert _id_lines(doc, ids, rx) == want, text
    assert any(_id_lines(Doc("d.md", parse(t, None, split_lines(t)), split_lines(t)), ids, rx)[0] for t in texts)


def test_lines_split_on_first_use_are_the_split_lines() -> None:
    from gitpilot.context.lines import HEAD, Lines
    from gitpilot.context.markdown import split_lines

    long = "".join(f"line {i}\n" for i in range(3 * HEAD)) + "last"
    texts = ["", "\n", "a", "a\n", "a\nb", "---\ntitle: x\n---\n# T\n", "a\r\nb\rc\u2028d\n", "\x0c\n\x85x",
             long, long + "\n", "x" * 5000 + "\n" + "y\n" * 300, "\n" * (HEAD + 3)]
    for text in texts:
        want = split_lines(text)
        n = len(want)
        for probe in (lambda x: len(x), lambda x: list(x), lambda x: x[0:1], lambda x: x[1:200], lambda x: x[:HEAD],
                      lambda x: x[3:HEAD], lambda x: x[HEAD - 1 : HEAD + 2], lambda x: x[-3:], lambda x: x[::2]):
            assert probe(Lines(text)) == probe(want), (text[:40], probe)
        for i in [*range(-n, n), *range(n, n + 3), HEAD - 1, HEAD, -n - 1]:
            fresh = Lines(text)
            if -n <= i < n:
                assert fresh[i] == want[i]
            else:
                try:
                    fresh[i]
                except IndexError:
                    continue
                raise AssertionError(f"line {i} of {n}")
        got = Lines(text)
        assert got == want and list(got) == want and got.all() == want and len(got) == n


def test_front_matter_read_from_the_first_lines_is_the_front_matter_of_all_of_them() -> None:
    from gitpilot.context import frontmatter
    from gitpilot.context.lines import Lines
    from gitpilot.context.markdown import split_lines

    def defined(lines: list[str]) -> frontmatter.FrontMatter:  # as first written: lines 2-200 at once
        if not lines or lines[0].strip().lstrip("\ufeff") != "---":
            return frontmatter.NONE
        body: list[str] = []
        for line in lines[1:200]:
            if line.strip() in ("---", "..."):
                break
            body.append(line.rstrip("\r\n"))
        else:
            return frontmatter.NONE
        got = frontmatter.parse(["---\n", *(b + "\n" for b in body), "---\n"])
        assert got != frontmatter.NONE or not body
        return got

    for close in (1, 2, 31, 32, 33, 40, 198, 199, 200, 201, None):
        head = ["---\n", "title: Video models\n", "description: Download the url\n", "paths: src/**\n"]
        head += [f"key{i}: value {i}\n" for i in range(max(0, (close or 260) - len(head)))]
        rest = ([] if close is None else ["...\n" if close == 33 else "---\n"]) + ["# Title\n", "Text.\n"] * 50
        text = "".join(head + rest)
        want = defined(split_lines(text))
        assert frontmatter.parse(Lines(text)) == want == frontmatter.parse(split_lines(text)), close
        assert (want == frontmatter.NONE) == (close is None or close > 199), close


# --- reading and resolving sources without walking every path through os.path.realpath ----------


def _long_way(root: Path, path: str) -> tuple[str | None, str]:
    """``safepaths.read_text`` as first written: resolve, check inside, stat, read."""
    from gitpilot.context import safepaths

    if not safepaths.inside(root, path):
        return None, "outside"
    full = root / path
    try:
        if os.stat(full).st_size > safepaths.MAX_FILE_BYTES:
            return None, "too-large"
        data = full.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None, "missing"
    try:
        return data.decode("utf-8"), "ok"
    except UnicodeDecodeError:
        return None, "not-utf8"


def _tree(tmp_path: Path) -> tuple[Path, list[str]]:
    from gitpilot.context import safepaths

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Outside\n")
    root = make_repo(tmp_path / "repo", {"docs/a.md": "# A\n", "docs/deep/b.md": "# B\n", "README.md": "# R\n",
                                         "~home.md": "# tilde\n"})
    (root / "docs" / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "docs" / "big.md").write_bytes(b"x" * (safepaths.MAX_FILE_BYTES + 1))
    os.symlink("a.md", root / "docs" / "link.md")  # inside
    os.symlink("../../outside/secret.md", root / "docs" / "away.md")  # outside
    os.symlink(str(outside), root / "ext")  # a directory outside
    os.symlink("docs", root / "alias")  # a directory inside
    paths = ["docs/a.md", "docs/deep/b.md", "README.md", "docs/latin1.md", "docs/big.md", "docs/link.md",
             "docs/away.md", "ext/secret.md", "alias/a.md", "alias/deep/b.md", "docs", "docs/none.md",
             "none/x.md", "docs/../README.md", "./README.md", "docs//a.md", "~home.md", "/etc/passwd"]
    return root, paths


def test_reading_a_source_gives_what_the_long_way_gives(tmp_path: Path) -> None:
    from gitpilot.context import safepaths

    root, paths = _tree(tmp_path)
    for path in paths:
        got = safepaths.read_text(root, path)
        assert (got.text, got.status) == _long_way(root, path), path
    assert safepaths.read_text(root, "ext/secret.md").status == "outside"
    assert safepaths.read_text(root, "alias/a.md").text == "# A\n"
    for order, keep in ((paths, 64), (paths[::-1], 64), (paths, 1)):  # one reader, directories opened once
        with safepaths.Reader(root) as reader:
            reader.KEEP = keep  # (1: every directory but the path's own closed again)
            for path in order:
                got = safepaths.read_text(root, path, reader)
                assert (got.text, got.status) == _long_way(root, path), path


def test_one_resolver_resolves_every_path_as_realpath_does(tmp_path: Path) -> None:
    from gitpilot.context import safepaths

    root, paths = _tree(tmp_path)
    res = safepaths.Resolver(root)
    for path in paths + ["alias", "ext", "docs/deep"]:
        assert res.inside(path) == safepaths.inside(root, path), path
        assert res.real_path(path) == safepaths.real_path(root, path), path
    assert res.real_path("alias/deep/b.md") == "docs/deep/b.md" and res.real_path("ext/secret.md") is None


def test_a_file_of_imports_only_is_told_apart_as_before() -> None:
    import re

    from gitpilot.context.sources import only_imports

    rx = re.compile(r"^[ \t]*@(\S+)[ \t]*$")

    def defined(text: str) -> bool:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("<!--")]
        return bool(lines) and all(rx.match(ln) for ln in lines)

    for text in ("@AGENTS.md\n", "<!-- x -->\n@a.md\n\n  @b.md  \n", "@a.md\nsee @b.md\n", "# Title\n@a.md\n",
                 "", "\n\n", "<!-- only -->\n", "mail me@example.com\n", "@a.md\r\n@b.md\r\n", "no at sign\n",
                 # longer than the head that is looked at first: a line cut by it, a decision after it
                 "@docs/a-long-name.md\n" * 300, "@a.md\n" * 600 + "text after the head\n",
                 "@a.md\r\n" * 400 + "@b.md", "# Title @x\n" + "x" * 5000, "\n" * 3000 + "@a.md\n"):
        assert only_imports(text) == defined(text), text[:40]
    assert only_imports("@docs/a-long-name.md\n" * 300) and not only_imports("@a.md\n" * 600 + "text\n")


# --- the term statistics cache: reused only where it is the same, never served stale ---------------

GUIDE = {
    "AGENTS.md": "# Rules\n\nKeep changes small.\n",
    "docs/cache.md": "# Cache\n\nEntries expire after ten minutes.\n\n## Eviction\n\nLeast recently used first.\n",
    "docs/retry.md": "# Retries\n\nRequests are retried three times.\n\n## Backoff\n\nExponential backoff.\n",
    "src/cache.py": "def expire_entries():\n    pass\n",
}


_capsule = capsule_text
_forget_capsules = forget_capsules


def test_term_statistics_are_reused_and_an_edited_file_is_counted_afresh(tmp_path: Path) -> None:
    from gitpilot.context.terms import DocTerms

    root = make_repo(tmp_path / "repo", GUIDE)
    task = "Entries should expire after five minutes: change `expire_entries`"
    fresh = _capsule(root, task, use_cache=False)
    _forget_capsules(root)
    first = _capsule(root, task)
    assert first == fresh  # counted and stored on the way
    entries = sorted(p for p in (root / ".git" / "pilot" / "terms").rglob("*") if p.is_file() and "clean" not in p.name)
    assert entries and all(DocTerms.from_bytes(p.read_bytes()) is not None for p in entries)
    stamps = {p: p.stat().st_mtime_ns for p in entries}
    _forget_capsules(root)
    assert _capsule(root, task) == first  # a new build from the stored statistics: the same bytes
    assert {p: p.stat().st_mtime_ns for p in entries} == stamps  # read, not written again
    (root / "docs" / "cache.md").write_text(GUIDE["docs/cache.md"].replace("ten minutes", "an hour, expire entries"))
    edited = _capsule(root, task)
    assert "an hour, expire entries" in edited and edited == _capsule(root, task, use_cache=False)
    _forget_capsules(root)
    git(root, "commit", "-qam", "an hour")  # a new blob: its statistics are counted and stored
    _forget_capsules(root)
    assert _capsule(root, task) == edited == _capsule(root, task, use_cache=False)
    for p in entries:  # a damaged store is not trusted: the statistics are counted again
        p.write_bytes(b"\x00garbage")
    _forget_capsules(root)
    assert _capsule(root, task) == edited


AREA_FILES = {
    "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
    "docs/widgets/popup.md": "# Popup\n\nThe field picker popup opens with Ctrl+Space.\n",
    "packages/widgets/AGENTS.md": "# Widgets\n\nQuery the DOM by role in tests.\n",
    "packages/widgets/picker/popup.ts": "export function openPopup() {}\n",
    "packages/widgets/picker/field.ts": "export const field = 1;\n",
    "packages/charts/legend.ts": "export const legend = 1;\n",
    "packages/charts/AGENTS.md": "# Charts\n\nLegends stay left-aligned.\n",
    **{f"docs/guide/page{i}.md": f"# Page {i}\n\n" + f"Page {i} describes the dashboard layout.\n" * 12
       for i in range(30)},
}


def test_the_code_area_kept_for_a_tree_is_what_a_fresh_build_finds_and_follows_the_tree(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", AREA_FILES)
    task = "The field picker popup ignores Esc"
    fresh = _capsule(root, task, use_cache=False)
    assert "Query the DOM by role in tests." in fresh  # the area (packages/widgets) brings its rules
    _forget_capsules(root)
    assert _capsule(root, task) == fresh  # worked out and kept
    kept = sorted((root / ".git" / "pilot" / "area").glob("tree-*"))
    assert len(kept) == 1
    _forget_capsules(root)
    assert _capsule(root, task) == fresh  # read back: the same bytes
    # the code moves: the area goes with it (the record kept for the old tree is not used)
    git(root, "mv", "packages/widgets/picker", "packages/charts/picker")
    git(root, "commit", "-qm", "move the picker")
    _forget_capsules(root)
    moved = _capsule(root, task)
    assert moved == _capsule(root, task, use_cache=False)
    assert "Legends stay left-aligned." in moved and "Query the DOM by role in tests." not in moved
    for damaged in (b"\x00garbage", b""):
        kept[0].write_bytes(damaged)
        _forget_capsules(root)
        assert _capsule(root, task) == moved


CONTRIB = {
    "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
    "CONTRIBUTING.md": "# Contributing\n\n## Running the tests\n\nRun `make test` before a pull request.\n\n"
    "## Documentation\n\nBuild the docs with `mkdocs serve` and preview them.\n\n"
    "## Commit messages\n\nUse conventional commits.\n",
    "docs/README.md": "# Docs\n\n## Building the docs\n\nRun mkdocs build.\n",
    **{f"docs/guide/page{i}.md": f"# Page {i}\n\n" + f"Page {i} describes the dashboard layout.\n" * 12
       for i in range(30)},
}


def test_convention_priors_kept_for_a_tree_are_what_a_fresh_build_finds(tmp_path: Path) -> None:
    import hashlib
    from dataclasses import replace

    from gitpilot.context.candidates import KeptPriors
    from gitpilot.context.conventions import convention_priors

    root = make_repo(tmp_path / "repo", CONTRIB)
    tasks = ["Document the dashboard layout in the docs", "Fix the dashboard layout colours"]
    fresh = {t: _capsule(root, t, use_cache=False) for t in tasks}
    for t in tasks:  # a task about documentation has one more convention class: kept apart
        _forget_capsules(root)
        assert _capsule(root, t) == fresh[t]
        _forget_capsules(root)
        assert _capsule(root, t) == fresh[t]  # read back
    kept = sorted((root / ".git" / "pilot" / "conventions").glob("tree-*"))
    assert len(kept) == 2  # for a task about documentation, and for the others
    # another content of a developer document: its priors are worked out again
    (root / "CONTRIBUTING.md").write_text(CONTRIB["CONTRIBUTING.md"].replace("## Running the tests", "## Notes"))
    _forget_capsules(root)
    edited = _capsule(root, tasks[1])
    assert edited == _capsule(root, tasks[1], use_cache=False) and edited != fresh[tasks[1]]
    for damaged in (b"\x00garbage", b""):
        for f in kept:
            f.write_bytes(damaged)
        _forget_capsules(root)
        assert _capsule(root, tasks[1]) == edited
    # the same documents in another order, or one without a known blob: the definition's priors
    docs = [replace(d, blob=hashlib.sha1("".join(d.lines).encode()).hexdigest()) for d in _docs(CONTRIB)]
    store = KeptPriors(tmp_path / "pilot")
    for order in (docs, docs[::-1], [d if i else replace(d, blob="") for i, d in enumerate(docs)]):
        for task in tasks + tasks:
            assert store.priors(order, task) == convention_priors(order, task)
    assert convention_priors(docs, tasks[0]) != convention_priors(docs, tasks[1])


FRONT = {
    "AGENTS.md": "# Guide\n\nKeep diffs small.\n",
    # what the page is about is in its front matter only
    "docs/providers/minimax.mdx": "---\ntitle: MiniMax video\ndescription: Download the expiring clip bytes\n---\n"
    "# Provider\n\nThe provider makes clips.\n\n## Options\n\nSet them.\n",
    "docs/providers/other.mdx": "---\ntitle: Other provider\n---\n# Other\n\n## MiniMax video download\n\n"
    "Download the MiniMax video bytes: the link expires.\n",
    "CHANGELOG.md": "# Changelog\n\n## 1.0.1\n\n- video download fixed\n",
    **{f"docs/guide/page{i}.md": f"# Page {i}\n\n" + f"Page {i} describes the dashboard layout.\n" * 12
       for i in range(30)},
}


def test_what_the_candidates_are_kept_for_a_tree_is_what_a_fresh_build_finds(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FRONT)
    task = "Download the MiniMax video bytes instead of the expiring link"
    fresh = _capsule(root, task, use_cache=False)
    assert "docs/providers/minimax.mdx" in fresh
    _forget_capsules(root)
    assert _capsule(root, task) == fresh
    kept = sorted((root / ".git" / "pilot" / "candidates").glob("tree-*"))
    assert len(kept) == 1
    _forget_capsules(root)
    assert _capsule(root, task) == fresh  # read back
    # another front matter: worked out again (its title no longer says what the page is about)
    page = root / "docs" / "providers" / "minimax.mdx"
    page.write_text(FRONT["docs/providers/minimax.mdx"].replace("title: MiniMax video", "title: Setup")
                    .replace("Download the expiring clip bytes", "Options"))
    _forget_capsules(root)
    edited = _capsule(root, task)
    assert edited == _capsule(root, task, use_cache=False) and edited != fresh
    # another path, the same contents: a kind follows the path
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    (root / "examples").mkdir()
    git(root, "mv", "docs/providers/other.mdx", "examples/other.mdx")
    git(root, "commit", "-qm", "move")
    _forget_capsules(root)
    moved = _capsule(root, task)
    assert moved == _capsule(root, task, use_cache=False) and moved != edited  # an example now
    for damaged in (b"\x00garbage", b""):
        kept[0].write_bytes(damaged)
        _forget_capsules(root)
        assert _capsule(root, task) == moved


def test_parsed_notes_are_kept_by_note_and_a_damaged_or_wrong_copy_is_not_trusted(tmp_path: Path) -> None:
    from gitpilot.context.cache import NoteMirror
    from gitpilot.context.markdown import map_from_marshal, map_to_marshal, parse

    root = make_repo(tmp_path / "repo", GUIDE)
    task = "Entries should expire after five minutes: change `expire_entries`"
    fresh = _capsule(root, task, use_cache=False)
    _forget_capsules(root)
    assert _capsule(root, task) == fresh  # parses, writes the notes
    _forget_capsules(root)
    assert _capsule(root, task) == fresh  # reads the notes, keeps them parsed
    copies = sorted(p for p in (root / ".git" / "pilot" / "maps").rglob("*") if p.is_file())
    blob = git(root, "rev-parse", "HEAD:docs/cache.md").strip()
    note = git(root, "rev-parse", f"refs/notes/pilot/sections:{blob[:2]}/{blob[2:]}", check=False).strip() or \
        git(root, "rev-parse", f"refs/notes/pilot/sections:{blob}").strip()
    mirror = NoteMirror(root / ".git" / "pilot")
    assert copies and mirror.get(note) == parse(GUIDE["docs/cache.md"])
    stamps = {p: p.stat().st_mtime_ns for p in copies}
    _forget_capsules(root)
    assert _capsule(root, task) == fresh and {p: p.stat().st_mtime_ns for p in copies} == stamps
    # a copy that names other lines (a map of another text): checked against the file, not used
    wrong = parse("# Cache\n\nOther.\n\n## Eviction\n\nLeast.\n\n## More\n\nText here.\n")
    mirror.put(note, wrong)
    assert map_from_marshal(map_to_marshal(wrong)) == wrong
    assert _maps(root, "docs/cache.md") == (parse(GUIDE["docs/cache.md"]), 1)  # parsed again
    _forget_capsules(root)
    assert _capsule(root, task) == fresh
    # a wrong copy of the same length, once the right one is known to fit: still checked, not used
    assert any(blob in line for f in (root / ".git" / "pilot" / "maps").glob("fitting-*")
               for line in f.read_text().split())
    same_length = parse("# Cache\n\nOther words here.\n\n## Eviction\n\nSomething else.\n")
    assert same_length.line_count == parse(GUIDE["docs/cache.md"]).line_count
    mirror.put(note, same_length)
    assert _maps(root, "docs/cache.md") == (parse(GUIDE["docs/cache.md"]), 1)  # parsed again
    _forget_capsules(root)
    assert _capsule(root, task) == fresh
    # a copy whose head is whole but whose sections do not load: not used, parsed again
    import marshal

    head = list(marshal.loads(map_to_marshal(parse(GUIDE["docs/cache.md"]))))
    for rows in (b"\x00", marshal.dumps(tuple(tuple(s) for s in same_length.sections))):
        head[-1] = rows
        (root / ".git" / "pilot" / "maps" / note[:2] / note[2:]).write_bytes(marshal.dumps(tuple(head)))
        assert _maps(root, "docs/cache.md") == (parse(GUIDE["docs/cache.md"]), 1)
    _forget_capsules(root)
    assert _capsule(root, task) == fresh
    for p in copies:  # damaged copies are ignored
        p.write_bytes(b"\x00not a map")
    assert _maps(root, "docs/cache.md") == (parse(GUIDE["docs/cache.md"]), 0)  # the note is read again
    _forget_capsules(root)
    assert _capsule(root, task) == fresh


def test_a_map_read_back_from_its_copy_is_the_parsed_map_whether_its_sections_load_now_or_later() -> None:
    from gitpilot.context.markdown import map_from_marshal, map_to_marshal, parse

    texts = [
        GUIDE["docs/cache.md"],
        "Intro.\n\n# A\n\ntext\n\n## B\n\nkey = sk-live-1234\n\n### C\n\nc\n\n## D\n\nd\n\n# E\n\ne\n",
        "---\ntitle: x\n---\n# Only\n\n<!-- pilot:always -->\nkept\n<!-- /pilot:always -->\n",
        "no heading at all\n",
        "",
    ]
    for text in texts:
        parsed = parse(text, lambda t: "sk-live" in t)
        for check in (True, False):
            back = map_from_marshal(map_to_marshal(parsed), check=check)
            assert back is not None
            # what a task reads of every section without making it, then the sections themselves
            assert (back.count, back.any_withheld, back.parents, back.starts, back.body_ends) == (
                len(parsed.sections), any(s.withheld for s in parsed.sections),
                tuple(s.parent for s in parsed.sections), tuple(s.start for s in parsed.sections),
                tuple(s.body_end for s in parsed.sections))
            assert back.sections == parsed.sections and back == parsed and back.always == parsed.always
            assert [back.kids(i) for i in range(back.count)] == [parsed.kids(i) for i in range(parsed.count)]
            assert [back.heading_path(i) for i in range(back.count)] == [
                parsed.heading_path(i) for i in range(parsed.count)]
    assert any(parse(t, lambda t: "sk-live" in t).any_withheld for t in texts)


def _maps(root: Path, path: str) -> tuple[object, int]:
    from gitpilot.context.cache import load_maps
    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.repo import Repo

    text = (root / path).read_text()
    blob = git(root, "rev-parse", f"HEAD:{path}").strip()
    maps, parsed = load_maps(Repo.discover(root), {path: (blob, text, split_lines(text))},
                             lambda t, lines: parse(t, None, lines))
    return maps[path], parsed


def test_stored_statistics_give_back_every_posting_and_an_inconsistent_record_is_refused() -> None:
    from array import array

    from gitpilot.context.markdown import parse, split_lines
    from gitpilot.context.terms import DocTerms, compute

    text = DOCS["docs/providers/minimax.md"]
    lines = split_lines(text)
    fresh = compute(parse(text, None, lines), lines)
    back = DocTerms.from_bytes(fresh.to_bytes())
    assert back is not None and back.postings == fresh.postings and fresh.postings
    assert back.has("video") and not back.has("vide") and list(back.post("absent")) == []
    assert back.post("video") == fresh.post("video") and len(back.post("video")) % 2 == 0
    bounds = array(next(c for c in "IL" if array(c).itemsize == 4))  # as the store keeps them
    bounds.frombytes(back.starts)
    for broken in (list(reversed(bounds)), [*bounds[:-1], bounds[-1] + 1], list(bounds[:-1])):
        bad = DocTerms(back.index, array(bounds.typecode, broken).tobytes(), back.buffer, back.lengths,
                       back.headings, back.plens, back.title_postings)
        assert DocTerms.from_bytes(bad.to_bytes()) is None


def test_path_patterns_match_as_before() -> None:
    from gitpilot.context.sources import glob_regex, matches

    def defined(path: str, patterns: list[str]) -> bool:
        for p in patterns:
            if p.startswith("*.") and "/" not in p and not any(c in p[2:] for c in "*?["):
                if path.lower().endswith(p[1:].lower()):
                    return True
            elif glob_regex(p).match(path):
                return True
        return False

    paths = ["README.md", "docs/Guide.MD", "a/b/c.mdx", "notes.txt", "docs/x.md.bak", ".claude/rules/t.md", "md"]
    for patterns in (["*.md", "*.mdx"], ["*.MD"], ["docs/*"], ["*.m?"], ["**/rules/*.md"], ["*.md", "docs/"], []):
        for path in paths:
            assert matches(path, patterns) == defined(path, patterns), (path, patterns)


def _double(x: int) -> int:
    return 2 * x


def test_work_spread_over_processes_is_what_one_process_computes() -> None:
    from gitpilot.context.parallel import MIN_ITEMS, map_all

    items = list(range(3 * MIN_ITEMS + 5))
    want = [2 * x for x in items]

    def enc(r: int) -> bytes:
        return str(r).encode()

    def dec(b: bytes) -> int | None:
        return int(b)

    assert map_all(_double, items, enc, dec, processes=3) == want
    assert map_all(_double, items[:5], enc, dec, processes=3) == want[:5]  # too few: no fork
    parent = os.getpid()

    def enc_fails_in_a_copy(r: int) -> bytes:
        if os.getpid() != parent:
            raise RuntimeError("a copy that fails")
        return enc(r)

    # every copy fails, or sends what does not decode: this process does their slices itself
    assert map_all(_double, items, enc_fails_in_a_copy, dec, processes=3) == want
    assert map_all(_double, items, enc, lambda b: None, processes=3) == want


def test_a_cold_capsule_over_many_files_is_the_same_built_side_by_side(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gitpilot.context import parallel

    files = {f"docs/topic{i:03d}.md": f"# Topic {i}\n\nThe cache of topic {i} expires.\n\n## Part\n\nMore on {i}.\n"
             for i in range(2 * parallel.MIN_ITEMS)}
    root = make_repo(tmp_path / "repo", {**GUIDE, **files})
    task = "Entries should expire after five minutes: change `expire_entries`"
    monkeypatch.setattr(parallel, "workers", lambda: 3)
    spread = _capsule(root, task)  # cold: every map parsed, every file's terms counted, by 3 processes
    assert (root / ".git" / "pilot" / "terms").is_dir()
    monkeypatch.setattr(parallel, "workers", lambda: 1)
    for kind in ("refs/pilot/", "refs/notes/pilot/"):
        for ref in git(root, "for-each-ref", "--format=%(refname)", kind).split():
            git(root, "update-ref", "-d", ref)
    import shutil

    shutil.rmtree(root / ".git" / "pilot")
    assert _capsule(root, task) == spread == _capsule(root, task, use_cache=False)


def test_copies_are_forked_only_for_processors_that_are_not_busy(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gitpilot.context import parallel

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3, 4, 5, 6, 7}, raising=False)
    for load, want in ((0.1, 4), (1.0, 4), (6.0, 3), (7.4, 2), (8.0, 1), (30.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert parallel.workers() == want, load
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    for load, want in ((0.2, 2), (1.0, 2), (1.6, 1), (3.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert parallel.workers() == want, load


# --- the roles of the index's paths, kept for the paths and options -------------------------------

ROLE_FILES = {
    "CLAUDE.md": "# Memory\n",
    "AGENTS.md": "# Agents\n",
    "pkg/AGENTS.md": "# Nested\n",
    "CONTRIBUTING.md": "# Contributing\n",
    "docs/SECURITY.md": "# Security\n",
    "docs/guide.md": "# Guide\n",
    "vendor/lib/README.md": "# Vendored\n",
    ".claude/rules/style.md": "# Style\n",
    "src/app.py": "print(1)\n",
}


def test_the_roles_kept_for_the_index_paths_are_what_the_names_give(tmp_path: Path) -> None:
    from gitpilot.config import load
    from gitpilot.context import sources as S
    from gitpilot.context.warm import kept_index_roles, options_from
    from gitpilot.repo import Repo

    root = make_repo(tmp_path / "repo", ROLE_FILES)
    repo = Repo.discover(root)

    def by_names(inv: S.Inventory, opts: S.Options, memory: str) -> dict[str, list[str]]:
        assert S.index_roles(inv.entries, opts, memory) == _one_by_one(inv, opts, memory)
        return _one_by_one(inv, opts, memory)

    def _one_by_one(inv: S.Inventory, opts: S.Options, memory: str) -> dict[str, list[str]]:
        out = {}
        for p in inv.entries:
            roles = (["context"] if S.matches(p, opts.files) and not S.excluded_by_default(p) else [])
            roles += [memory, "rule"] if S.is_memory_path(p) else []
            roles += ["rule"] if S.is_rule_name(p, opts) else []
            roles += ["nested"] if S.nested_dir(p, opts) is not None else []
            if roles:
                out[p] = roles
        return out

    opts = options_from(load(root))
    inv = S.inventory(repo)
    want = by_names(inv, opts, "memory")
    assert want["CLAUDE.md"] == ["context", "memory", "rule"] and "vendor/lib/README.md" not in want
    assert kept_index_roles(inv, opts, "memory") == want  # worked out, kept
    kept = sorted((root / ".git" / "pilot" / "plan").glob("tree-*"))
    assert len(kept) == 1
    assert kept_index_roles(S.inventory(repo), opts, "memory") == want  # read back
    # other options (another agent: memory is context), other paths: not the kept answer
    assert kept_index_roles(inv, opts, "context") == by_names(inv, opts, "context") != want
    (root / "docs" / "more.md").write_text("# More\n")
    git(root, "add", "docs/more.md")
    inv = S.inventory(repo)
    assert kept_index_roles(inv, opts, "memory") == by_names(inv, opts, "memory") != want
    for damaged in (b"", b"\x00garbage"):
        kept[0].write_bytes(damaged)
        assert kept_index_roles(inv, opts, "memory") == by_names(inv, opts, "memory")
    # a record that names a path the index does not hold is not used
    import marshal

    key, roles = marshal.loads(kept[0].read_bytes())
    kept[0].write_bytes(marshal.dumps((key, {**roles, "docs/gone.md": ["context"]})))
    assert kept_index_roles(inv, opts, "memory") == by_names(inv, opts, "memory")


def test_a_map_known_to_fit_is_checked_again_by_the_length_of_its_text(tmp_path: Path) -> None:
    from gitpilot.context.cache import FittingNotes
    from gitpilot.context.lines import Lines
    from gitpilot.context.markdown import parse

    text = GUIDE["docs/cache.md"]
    smap = parse(text)
    blob, copy = "b" * 40, "c" * 40 + ":0123abcd"
    first = FittingNotes(tmp_path)
    assert first.fits(blob, copy, smap, Lines(text)) and first.new  # checked in full, remembered
    first.save()
    again = FittingNotes(tmp_path)
    assert again.fits(blob, copy, smap, Lines(text)) and not again.new  # known: not checked again
    # the same blob and copy with a text of another length: checked in full (and these lines do not fit)
    assert not again.fits(blob, copy, smap, Lines(text + "\n## Extra\n\nMore.\n"))
    assert not again.fits(blob, copy, smap, Lines(text[:-1]))
    # another copy of the map: checked in full
    assert again.fits(blob, "c" * 40 + ":ffffffff", smap, Lines(text)) and again.new


# --- what git lists of the index, and the index's stat data, kept for the index file ------------


def test_the_index_listing_kept_is_what_git_lists_of_the_index_now(tmp_path: Path) -> None:
    from gitpilot.repo import Repo

    root = make_repo(tmp_path / "repo", FILES)
    repo = Repo.discover(root)
    kept_list = root / ".git" / "pilot" / "index-listing"

    def listed() -> bytes:
        return git(root, "ls-files", "-s", "-z").encode("utf-8", "surrogateescape")

    assert repo.index_listing() == listed() and kept_list.exists()
    made = kept_list.stat().st_mtime_ns
    assert repo.index_listing() == listed() and kept_list.stat().st_mtime_ns == made  # read back
    # the index changes (a file added, one removed, one edited and staged): listed again
    (root / "src" / "more.py").write_text("x = 1\n")
    (root / "docs" / "guide.md").write_text("# Guide\n\nEdited.\n")
    git(root, "add", "-A")
    git(root, "rm", "-q", "--cached", "AGENTS.md")
    assert repo.index_listing() == listed() != b""
    assert b"src/more.py" in repo.index_listing() and b"AGENTS.md" not in repo.index_listing()
    for damaged in (b"", b"\x00garbage"):
        kept_list.write_bytes(damaged)
        assert repo.index_listing() == listed()


def test_the_map_copies_of_a_tree_are_read_from_one_pack_and_a_damaged_pack_is_not_trusted(tmp_path: Path) -> None:
    from gitpilot.context.cache import NoteMirror
    from gitpilot.context.markdown import parse

    root = make_repo(tmp_path / "repo", GUIDE)
    task = "Entries should expire after five minutes: change `expire_entries`"
    fresh = _capsule(root, task, use_cache=False)
    for _ in range(3):  # parsed and noted, the notes read and copied, the copies read and packed
        _forget_capsules(root)
        assert _capsule(root, task) == fresh
    packs = sorted((root / ".git" / "pilot" / "maps").glob("pack-*"))
    assert len(packs) == 1
    made = packs[0].stat().st_mtime_ns
    _forget_capsules(root)
    assert _capsule(root, task) == fresh and packs[0].stat().st_mtime_ns == made  # read, not written
    # the pack's copies are the notes' maps, each checked as its own file's copy would be
    notes = sorted(p.parent.name + p.name for p in (root / ".git" / "pilot" / "maps").glob("??/*"))
    mirror = NoteMirror(root / ".git" / "pilot")
    assert mirror.open_pack(notes) and sorted(mirror.packed) == notes
    assert not NoteMirror(root / ".git" / "pilot").open_pack(notes[:-1])  # another tree's notes
    assert _maps(root, "docs/cache.md") == (parse(GUIDE["docs/cache.md"]), 0)
    _forget_capsules(root)
    assert _capsule(root, task) == fresh
    # damaged: a byte of a copy (its crc no longer one known to fit: checked in full, parsed
    # again), a cut pack (not used): the maps and the capsule are what a fresh build gives
    data = packs[0].read_bytes()
    for damaged in (data[:-40] + bytes(b ^ 0x5A for b in data[-40:]), data[: len(data) // 2], b""):
        packs[0].write_bytes(damaged)
        assert _maps(root, "docs/cache.md")[0] == parse(GUIDE["docs/cache.md"])
        _forget_capsules(root)
        assert _capsule(root, task) == fresh
