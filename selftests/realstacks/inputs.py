"""make realstacks' workload inputs, the same bytes on every run.

python3 inputs.py DIR writes:
  DIR/data.txt    256 KiB of words from a fixed seed (xz and gzip)
  DIR/build.sql   sqlite3: a table filled row by row, one transaction
                  each (journal and database writes, syncs), then in
                  bulk, queried and vacuumed
  DIR/query.sql   sqlite3: queries of that database (page reads)
"""
import os
import random
import sys

WORDS = ("stack frame pointer return address unwind deferred kernel user "
         "sample record cookie entry callchain table section row offset "
         "program counter register walk trace perf event task buffer").split()


def data(size=256 * 1024, seed=40):
    rnd = random.Random(seed)
    out, n = [], 0
    while n < size:
        line = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 14)))
        line += f" {rnd.randint(0, 99999)}\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def build_sql(rows=40, bulk=3000):
    out = ["PRAGMA journal_mode=DELETE;",
           "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);",
           "CREATE INDEX t_name ON t(name);"]
    for i in range(rows):
        out.append(f"INSERT INTO t(name, v) VALUES ('n{i % 7}', {i}.5);")
    out.append(f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
               f"FROM c WHERE x < {bulk}) INSERT INTO t(name, v) "
               f"SELECT 'bulk' || (x % 97), x * 0.25 FROM c;")
    out.append("SELECT count(*), sum(v) FROM t;")
    out.append("SELECT name, count(*) FROM t GROUP BY name "
               "ORDER BY 2 DESC, 1 LIMIT 3;")
    out.append("DELETE FROM t WHERE id % 5 = 0;")
    out.append("VACUUM;")
    return "\n".join(out) + "\n"


QUERY_SQL = """PRAGMA cache_size = 2;
SELECT count(*) FROM t WHERE name = 'bulk5';
SELECT sum(v) FROM t WHERE id % 3 = 0;
SELECT name, max(v) FROM t GROUP BY name ORDER BY name LIMIT 4;
"""


def main(argv):
    if len(argv) != 2:
        print("usage: inputs.py DIR", file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    for name, text in (("data.txt", data()), ("build.sql", build_sql()),
                       ("query.sql", QUERY_SQL)):
        with open(os.path.join(argv[1], name), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
