"""Datascript's test/datascript/test/pull_api.cljc through queries: each ``(d/pull db
pattern e)`` is ``[:find (pull ?e pattern) . :in $ ?e]`` (``d/pull-many``, a find-coll over
``[?e ...]``), so the pull is also kept registered. The reader alone is tested with the same
examples in tests/unit/pull/test_read.py, the :limit counts there too."""

from __future__ import annotations

from typing import Any

from tests.unit.conformance.datascript import Case, check, loaded
from workers import edn
from workers.zset import add_into

SOURCE = "pull_api.cljc"
# Datascript's schema, its default cardinality one spelled out.
SCHEMA = ("[{:db/ident :name :db/cardinality :db.cardinality/one} "
          "{:db/ident :aka :db/cardinality :db.cardinality/many} "
          "{:db/ident :child :db/cardinality :db.cardinality/many :db/valueType :db.type/ref} "
          "{:db/ident :friend :db/cardinality :db.cardinality/many :db/valueType :db.type/ref} "
          "{:db/ident :enemy :db/cardinality :db.cardinality/many :db/valueType :db.type/ref} "
          "{:db/ident :father :db/cardinality :db.cardinality/one :db/valueType :db.type/ref} "
          "{:db/ident :part :db/cardinality :db.cardinality/many :db/valueType :db.type/ref "
          ":db/isComponent true} "
          "{:db/ident :spec :db/cardinality :db.cardinality/one :db/valueType :db.type/ref "
          ":db/isComponent true}]")
DATOMS = """[1 :name "Petr"] [1 :aka "Devil"] [1 :aka "Tupen"] [2 :name "David"]
  [3 :name "Thomas"] [4 :name "Lucy"] [5 :name "Elizabeth"] [6 :name "Matthew"]
  [7 :name "Eunan"] [8 :name "Kerri"] [9 :name "Rebecca"] [1 :child 2] [1 :child 3]
  [2 :father 1] [3 :father 1] [6 :father 3] [10 :name "Part A"] [11 :name "Part A.A"]
  [10 :part 11] [12 :name "Part A.A.A"] [11 :part 12] [13 :name "Part A.A.A.A"] [12 :part 13]
  [14 :name "Part A.A.A.B"] [12 :part 14] [15 :name "Part A.B"] [10 :part 15]
  [16 :name "Part A.B.A"] [15 :part 16] [17 :name "Part A.B.A.A"] [16 :part 17]
  [18 :name "Part A.B.A.B"] [16 :part 18]"""


def adds(datoms: str) -> str:
    return "[" + datoms.replace("[", "[:db/add ") + "]"


TEST_DB = (SCHEMA, adds(DATOMS))
FRIENDS = (SCHEMA, adds(DATOMS + " [4 :friend 5] [4 :friend 6] [4 :friend 7] [4 :friend 8]"))
RECURSIVE = (SCHEMA, adds(DATOMS + " [4 :friend 5] [5 :friend 6] [6 :friend 7] [7 :friend 8] "
                                   "[4 :enemy 6] [5 :enemy 7] [6 :enemy 8] [7 :enemy 4]"))
SEEN = ("[{:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/one} "
        "{:db/ident :enemy :db/valueType :db.type/ref :db/cardinality :db.cardinality/one} "
        "{:db/ident :name :db/cardinality :db.cardinality/one}]",
        '[{:db/id 1 :name "1" :friend 2 :enemy 2} {:db/id 2 :name "2"}]')
RECURSION_DB = ("[{:db/ident :friend :db/valueType :db.type/ref :db/cardinality "
                ":db.cardinality/one} {:db/ident :enemy :db/valueType :db.type/ref "
                ":db/cardinality :db.cardinality/one}]",
                "[{:db/id 1 :friend 2} {:db/id 2 :enemy 3} {:db/id 3 :friend 4} "
                "{:db/id 4 :enemy 5} {:db/id 5 :friend 6} {:db/id 6 :enemy 7}]")

PART_CYCLE = (SCHEMA, adds(DATOMS + " [12 :part 10]"))
REF_CYCLES = ("[{:db/ident :part :db/valueType :db.type/ref :db/cardinality "
              ":db.cardinality/one} {:db/ident :spec :db/valueType :db.type/ref "
              ":db/cardinality :db.cardinality/one}]",
              adds("[1 :part 2] [2 :part 3] [3 :part 1] [1 :spec 2] [2 :spec 1]"))
FRIEND_CYCLE = (SCHEMA, RECURSIVE[1][:-1] + " [:db/add 8 :friend 4]]")


def pull(test: str, pattern: str, entity: int | str, expected: str,
         db: tuple[str, ...] = TEST_DB, **more: Any) -> Case:
    return Case(f"{SOURCE} {test}", db, f"[:find (pull ?e {pattern}) . :in $ ?e]", expected,
                f"[{entity}]", **more)


PARTS = ('{:name "Part A" :part [{:db/id 11 :name "Part A.A" :part [{:db/id 12 '
         ':name "Part A.A.A" :part [{:db/id 13 :name "Part A.A.A.A"} {:db/id 14 '
         ':name "Part A.A.A.B"}]}]} {:db/id 15 :name "Part A.B" :part [{:db/id 16 '
         ':name "Part A.B.A" :part [{:db/id 17 :name "Part A.B.A.A"} {:db/id 18 '
         ':name "Part A.B.A.B"}]}]}]}')
PARTS_LOOP = ('{:name "Part A" :part [{:db/id 11 :name "Part A.A" :part [{:db/id 12 '
              ':name "Part A.A.A" :part [{:db/id 10 :name "Part A" :part [{:db/id 11} '
              '{:db/id 15 :name "Part A.B" :part [{:db/id 16 :name "Part A.B.A" :part '
              '[{:db/id 17 :name "Part A.B.A.A"} {:db/id 18 :name "Part A.B.A.B"}]}]}]} '
              '{:db/id 13 :name "Part A.A.A.A"} {:db/id 14 :name "Part A.A.A.B"}]}]} '
              '{:db/id 15 :name "Part A.B" :part [{:db/id 16 :name "Part A.B.A" :part '
              '[{:db/id 17 :name "Part A.B.A.A"} {:db/id 18 :name "Part A.B.A.B"}]}]}]}')
ENEMIES = ('{:db/id 4 :name "Lucy" :friend [{:db/id 5 :name "Elizabeth" :friend [{:db/id 6 '
           ':name "Matthew" :enemy [{:db/id 8 :name "Kerri"}]}] :enemy [{:db/id 7 '
           ':name "Eunan" :friend [{:db/id 8 :name "Kerri"}] :enemy [{:db/id 4 :name "Lucy" '
           ':friend [{:db/id 5}]}]}]}] :enemy [{:db/id 6 :name "Matthew" :friend [{:db/id 7 '
           ':name "Eunan" :friend [{:db/id 8 :name "Kerri"}] :enemy [{:db/id 4 :name "Lucy" '
           ':enemy [{:db/id 6}] :friend [{:db/id 5 :name "Elizabeth" :enemy [{:db/id 7}] '
           ':friend [{:db/id 6}]}]}]}] :enemy [{:db/id 8 :name "Kerri"}]}]}')
FRIENDS_CYCLE = ('{:db/id 4 :name "Lucy" :friend [{:db/id 5 :name "Elizabeth" :friend '
                 '[{:db/id 6 :name "Matthew" :friend [{:db/id 7 :name "Eunan" :friend '
                 '[{:db/id 8 :name "Kerri" :friend [{:db/id 4 :name "Lucy" :friend '
                 '[{:db/id 5}]}]}]}]}]}]}')
PART_SPEC = ("{:db/id 1, :spec {:db/id 2 :spec {:db/id 1, :spec {:db/id 2}, :part {:db/id 2}} "
             ":part {:db/id 3, :part {:db/id 1, :spec {:db/id 2}, :part {:db/id 2}}}} "
             ":part {:db/id 2 :spec {:db/id 1, :spec {:db/id 2}, :part {:db/id 2}} "
             ":part {:db/id 3, :part {:db/id 1, :spec {:db/id 2}, :part {:db/id 2}}}}}")
FRIEND_CHAIN = ('{:db/id 4 :name "Lucy" :friend [{:db/id 5 :name "Elizabeth" :friend '
                '[{:db/id 6 :name "Matthew" :friend [{:db/id 7 :name "Eunan" :friend '
                '[{:db/id 8 :name "Kerri"}]}]}]}]}')

CASES = [
    pull("test-pull-attr-spec", "[:name :aka]", 1, '{:name "Petr" :aka ["Devil" "Tupen"]}'),
    pull("test-pull-attr-spec", "[:name :father :db/id]", 6,
         '{:name "Matthew" :father {:db/id 3} :db/id 6}'),
    Case(f"{SOURCE} test-pull-attr-spec (pull-many)", TEST_DB,
         "[:find [(pull ?e [:name]) ...] :in $ [?e ...]]",
         '[{:name "Petr"} {:name "Elizabeth"} {:name "Eunan"} {:name "Rebecca"}]',
         "[[1 5 7 9]]"),
    pull("test-pull-reverse-attr-spec", "[:name :_child]", 2,
         '{:name "David" :_child [{:db/id 1}]}'),
    pull("test-pull-reverse-attr-spec", "[:name {:_child [:name]}]", 2,
         '{:name "David" :_child [{:name "Petr"}]}'),
    pull("test-pull-reverse-attr-spec Reverse non-component references yield collections",
         "[:name :_father]", 3, '{:name "Thomas" :_father [{:db/id 6}]}'),
    pull("test-pull-reverse-attr-spec Reverse non-component references yield collections",
         "[:name :_father]", 1, '{:name "Petr" :_father [{:db/id 2} {:db/id 3}]}'),
    pull("test-pull-reverse-attr-spec Reverse non-component references yield collections",
         "[:name {:_father [:name]}]", 3, '{:name "Thomas" :_father [{:name "Matthew"}]}'),
    pull("test-pull-reverse-attr-spec Reverse non-component references yield collections",
         "[:name {:_father [:name]}]", 1,
         '{:name "Petr" :_father [{:name "David"} {:name "Thomas"}]}'),
    pull("test-pull-component-attr Component entities are expanded recursively",
         "[:name :part]", 10, PARTS),
    pull("test-pull-component-attr Reverse component references yield a single result",
         "[:name :_part]", 11, '{:name "Part A.A" :_part {:db/id 10}}'),
    pull("test-pull-component-attr Reverse component references yield a single result",
         "[:name {:_part [:name]}]", 11, '{:name "Part A.A" :_part {:name "Part A"}}'),
    pull("test-pull-wildcard", "[*]", 1,
         '{:db/id 1 :name "Petr" :aka ["Devil" "Tupen"] :child [{:db/id 2} {:db/id 3}]}'),
    pull("test-pull-wildcard", "[* :_child]", 2,
         '{:db/id 2 :name "David" :_child [{:db/id 1}] :father {:db/id 1}}'),
    *(pull("test-pull-wildcard", pattern, 1, '{:aka ["Devil" "Tupen"], :child [{:db/id 2} '
           '{:db/id 3}], :name "Petr", :db/id 1}')
      for pattern in ("[:name *]", "[:aka :name *]", "[:aka :child :name *]")),
    pull("test-pull-wildcard", "[[:aka :as :alias] [:name :as :first-name] *]", 1,
         '{:alias ["Devil" "Tupen"], :child [{:db/id 2} {:db/id 3}], :first-name "Petr", '
         ":db/id 1}"),
    pull("test-pull-limit Limits can be used as map specification keys",
         "[:name {(limit :friend 2) [:name]}]", 4,
         '{:name "Lucy" :friend [{:name "Elizabeth"} {:name "Matthew"}]}', FRIENDS),
    pull("test-pull-default Empty results return nil", "[:foo]", 1, "nil"),
    pull("test-pull-default A default can be used to replace nil results",
         '[(default :foo "bar")]', 1, '{:foo "bar"}'),
    pull("test-pull-default A default can be used to replace nil results",
         '[[:foo :default "bar"]]', 1, '{:foo "bar"}'),
    pull("test-pull-default A default can be used to replace nil results",
         "[[:foo :default false]]", 1, "{:foo false}"),
    pull("test-pull-default A default can be used to replace nil results",
         "[[:foo :as :bar :default false]]", 1, "{:bar false}"),
    pull("test-pull-default Ref default", "[:db/id [:child :default 1]]", 2,
         "{:child 1 :db/id 2}"),
    pull("test-pull-default Ref default", "[:db/id [:_child :default 2]]", 1,
         "{:_child 2 :db/id 1}"),
    pull("test-pull-as", '[[:name :as "Name"] [:aka :as :alias]]', 1,
         '{"Name" "Petr", :alias ["Devil" "Tupen"]}'),
    pull("test-pull-attr-with-opts", '[[:x :as "Name" :default "Nothing"]]', 1,
         '{"Name" "Nothing"}'),
    pull("test-pull-map Single attrs yield a map", "[:name {:father [:name]}]", 6,
         '{:name "Matthew" :father {:name "Thomas"}}'),
    pull("test-pull-map Multi attrs yield a collection of maps", "[:name {:child [:name]}]", 1,
         '{:name "Petr" :child [{:name "David"} {:name "Thomas"}]}'),
    pull("test-pull-map Missing attrs are dropped", "[:name {:father [:name]}]", 1,
         '{:name "Petr"}'),
    pull("test-pull-map Non matching results are removed from collections",
         "[:name {:child [:foo]}]", 1, '{:name "Petr"}'),
    pull("test-pull-map Map specs can override component expansion", "[:name {:part [:name]}]",
         10, '{:name "Part A" :part [{:name "Part A.A"} {:name "Part A.B"}]}'),
    pull("test-pull-map Map specs can override component expansion", "[:name {:part 1}]", 10,
         '{:name "Part A" :part [{:name "Part A.A"} {:name "Part A.B"}]}'),
    pull("test-seen Seen ids are tracked independently for different branches",
         "[:name {:friend [:name], :enemy [:name]}]", 1,
         '{:name "1" :friend {:name "2"} :enemy {:name "2"}}', SEEN),
    pull("test-pull-recursion Infinite recursion", "[:db/id :name {:friend ...}]", 4,
         FRIEND_CHAIN, RECURSIVE),
    pull("test-recursion", "[:db/id {:friend ...}]", 1, "{:db/id 1 :friend {:db/id 2}}",
         RECURSION_DB),
    pull("test-recursion", "[:db/id {:friend 1 :enemy 1}]", 1,
         "{:db/id 1 :friend {:db/id 2 :enemy {:db/id 3}}}", RECURSION_DB),
    pull("test-dual-recursion", "[:db/id {:friend 2 :enemy 1}]", 1,
         "{:db/id 1 :friend {:db/id 2 :enemy {:db/id 3 :friend {:db/id 4}}}}", RECURSION_DB),
    pull("test-dual-recursion", "[:db/id {:friend 2 :enemy 2}]", 1,
         "{:db/id 1 :friend {:db/id 2 :enemy {:db/id 3 :friend {:db/id 4 :enemy {:db/id 5}}}}}",
         RECURSION_DB),
    pull("test-dual-recursion", "[:db/id {:part ...} {:spec ...}]", 1, PART_SPEC, REF_CYCLES),
    pull("test-pull-recursion Multiple recursion specs in one pattern",
         "[:db/id :name {:friend 2 :enemy 2}]", 4, ENEMIES, RECURSIVE),
    pull("test-pull-recursion Reverse recursion", "[:db/id {:_friend ...}]", 8,
         "{:db/id 8, :_friend [{:db/id 7, :_friend [{:db/id 6, :_friend [{:db/id 5, "
         ":_friend [{:db/id 4}]}]}]}]}", RECURSIVE),
    pull("test-pull-recursion Reverse recursion", "[:db/id {:_friend 2}]", 8,
         "{:db/id 8, :_friend [{:db/id 7, :_friend [{:db/id 6}]}]}", RECURSIVE),
    pull("test-pull-recursion Cycles are handled by returning only the :db/id of entities "
         "which have been seen before", "[:db/id :name {:friend ...}]", 4, FRIENDS_CYCLE,
         FRIEND_CYCLE),
    pull("test-pull-component-attr Like explicit recursion, expansion will not allow loops",
         "[:name :part]", 10, PARTS_LOOP, PART_CYCLE),
    pull("test-pull-component-attr Reverse recursive component issue-411",
         "[:name {:_part ...}]", 14, '{:name "Part A.A.A.B" :_part {:name "Part A.A.A" '
         ':_part {:name "Part A.A" :_part {:name "Part A"}}}}'),
    pull("test-pull-component-attr Reverse recursive component issue-411",
         "[:name {:_part 2}]", 14,
         '{:name "Part A.A.A.B" :_part {:name "Part A.A.A" :_part {:name "Part A.A"}}}'),
    pull("test-lookup-ref-pull", "[:name :aka]", '[:name "Petr"]',
         '{:name "Petr" :aka ["Devil" "Tupen"]}'),
    pull("test-lookup-ref-pull", "[*]", '[:name "No such name"]', "nil"),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_deep_recursion() -> None:
    """test-deep-recursion: a chain of 2,900 friends pulled to its end, then kept live as its
    last entity changes."""
    start, depth = 100, 3000
    chain = " ".join(f'[{i} :name "Person-{i}"] [{i - 1} :friend {i}]'
                     for i in range(start + 1, depth))
    engine = loaded((SCHEMA, adds(f'[{start} :name "Person-{start}"] {chain}')))
    query = "[:find (pull ?e [:name {:friend ...}]) . :in $ ?e]"

    def end(pulled: Any) -> Any:
        for _ in range(depth - start - 1):
            pulled = pulled[edn.keyword("friend")][0]
        return pulled[edn.keyword("name")]

    assert end(engine.query(query, [start])) == f"Person-{depth - 1}"
    view = engine.register("q", query, [start])
    add_into(view, engine.transact(adds(f'[{depth - 1} :name "Last"]')).get("q", {}))
    (row,) = view
    assert view == {row: 1} and end(row[0]) == "Last"
