"""Shop load generator: the changes a CDC pipeline must carry, against examples/demo/shop.sql.

Each round runs a few transactions: new customers and orders (with lines), payments and
shipments, price and stock changes, cancellations that delete order lines, and whole-order
deletes. Once per run it also changes primary keys (a product's SKU, a customer's id, which
CDC carries as a delete plus a create) and runs ALTER TABLE mid-stream (a new column that
later rounds fill in). The same --seed gives the same changes.

    python examples/demo/loadgen.py --host 127.0.0.1 --port 3306 --user root --database shop
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

NEW_COLUMN = "loyalty_points"
SHOP_SQL = Path(__file__).with_name("shop.sql")


def create_shop(host: str, port: int, user: str, password: str, database: str) -> None:
    """Create `database` (utf8mb4) holding the sample shop from shop.sql."""
    sql = "\n".join(line for line in SHOP_SQL.read_text().splitlines() if not line.lstrip().startswith("--"))
    conn = pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True)
    with conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        cur.execute(f"ALTER DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        cur.execute(f"USE `{database}`")
        for statement in sql.split(";\n"):
            if statement.strip():
                cur.execute(statement)


class ShopLoad:
    def __init__(self, conn: pymysql.connections.Connection, rng: random.Random) -> None:
        self.conn = conn
        self.rng = rng
        self.counts = {"insert": 0, "update": 0, "delete": 0, "pk_change": 0, "alter": 0}

    # -- helpers ---------------------------------------------------------------------------
    def _one(self, sql: str, args: Any = None) -> Any:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            row = cur.fetchone()
        return row[0] if row else None

    def _ids(self, sql: str) -> list[Any]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return [r[0] for r in cur.fetchall()]

    def _exec(self, kind: str, sql: str, args: Any = None) -> int:
        with self.conn.cursor() as cur:
            n = cur.execute(sql, args)
        self.counts[kind] += n
        return n

    def _tx(self, fn: Any) -> None:
        self.conn.begin()
        try:
            fn()
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()

    # -- the changes -----------------------------------------------------------------------
    def new_customer(self) -> None:
        n = self._one("SELECT COALESCE(MAX(id), 0) + 1 FROM customers")
        tier = self.rng.choice(["bronze", "silver", "gold"])
        self._exec(
            "insert",
            "INSERT INTO customers (email, name, tier, active, created_at) VALUES (%s, %s, %s, 1, NOW(3))",
            (f"user{n}.{self.rng.randrange(10**6)}@example.com", f"Customer {n}", tier),
        )

    def new_order(self) -> None:
        customers = self._ids("SELECT id FROM customers WHERE active = 1")
        products = self._ids("SELECT sku FROM products")
        if not customers or not products:
            return
        customer = self.rng.choice(customers)
        self._exec(
            "insert",
            "INSERT INTO orders (customer_id, status, ordered_on) VALUES (%s, 'new', CURDATE())",
            (customer,),
        )
        order = self._one("SELECT LAST_INSERT_ID()")
        total = Decimal(0)
        for line in range(1, self.rng.randint(1, 3) + 1):
            sku = self.rng.choice(products)
            qty = self.rng.randint(1, 4)
            price = self._one("SELECT price FROM products WHERE sku = %s", (sku,))
            total += price * qty
            self._exec(
                "insert",
                "INSERT INTO order_lines VALUES (%s, %s, %s, %s, %s)",
                (order, line, sku, qty, price),
            )
            self._exec("update", "UPDATE products SET stock = stock - %s WHERE sku = %s", (qty, sku))
        self._exec("update", "UPDATE orders SET total = %s WHERE id = %s", (total, order))

    def advance_order(self) -> None:
        orders = self._ids("SELECT id FROM orders WHERE status IN ('new', 'paid') ORDER BY id")
        if orders:
            order = self.rng.choice(orders)
            self._exec(
                "update",
                "UPDATE orders SET status = IF(status = 'new', 'paid', 'shipped'), note = %s WHERE id = %s",
                (self.rng.choice([None, "gift wrap", "call before delivery", "ünïcødé ✓"]), order),
            )

    def cancel_order(self) -> None:
        orders = self._ids("SELECT id FROM orders WHERE status = 'new'")
        if orders:
            order = self.rng.choice(orders)
            self._exec("update", "UPDATE orders SET status = 'cancelled', total = 0 WHERE id = %s", (order,))
            self._exec("delete", "DELETE FROM order_lines WHERE order_id = %s", (order,))

    def delete_order(self) -> None:
        orders = self._ids("SELECT id FROM orders WHERE status = 'cancelled'")
        if orders:
            order = self.rng.choice(orders)
            self._exec("delete", "DELETE FROM orders WHERE id = %s", (order,))

    def reprice(self) -> None:
        sku = self.rng.choice(self._ids("SELECT sku FROM products"))
        factor = Decimal(self.rng.choice(["0.90", "0.95", "1.05", "1.10"]))
        self._exec("update", "UPDATE products SET price = ROUND(price * %s, 2) WHERE sku = %s", (factor, sku))

    def restock(self) -> None:
        self._exec("update", "UPDATE products SET stock = stock + 25 WHERE stock < 20")

    def reward(self) -> None:
        if self._has_new_column():
            customer = self.rng.choice(self._ids("SELECT id FROM customers"))
            self._exec(
                "update",
                f"UPDATE customers SET {NEW_COLUMN} = COALESCE({NEW_COLUMN}, 0) + %s WHERE id = %s",
                (self.rng.randint(1, 50), customer),
            )

    def change_primary_keys(self) -> None:
        """A SKU rename and a customer renumbering: the key itself changes."""
        sku = self._one("SELECT sku FROM products WHERE sku NOT LIKE '%%-V2' ORDER BY sku LIMIT 1")
        if sku:
            self._exec("pk_change", "UPDATE products SET sku = %s WHERE sku = %s", (f"{sku}-V2", sku))
            self._exec("update", "UPDATE order_lines SET sku = %s WHERE sku = %s", (f"{sku}-V2", sku))
        customer = self._one("SELECT MIN(id) FROM customers")
        if customer is not None:
            new_id = self._one("SELECT MAX(id) FROM customers") + 1000
            self._exec("pk_change", "UPDATE customers SET id = %s WHERE id = %s", (new_id, customer))
            self._exec("update", "UPDATE orders SET customer_id = %s WHERE customer_id = %s", (new_id, customer))

    def alter_table(self) -> None:
        """A column added mid-stream. Nullable without a default: rows that no event touches
        stay NULL on both sides (a DEFAULT would backfill old rows without binlog events)."""
        if not self._has_new_column():
            with self.conn.cursor() as cur:
                cur.execute(f"ALTER TABLE customers ADD COLUMN {NEW_COLUMN} INT NULL")
            self.counts["alter"] += 1

    def _has_new_column(self) -> bool:
        return bool(
            self._one(
                "SELECT COUNT(*) FROM information_schema.COLUMNS"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'customers' AND COLUMN_NAME = %s",
                (NEW_COLUMN,),
            )
        )

    def round(self, i: int, rounds: int) -> None:
        self._tx(self.new_customer)
        for _ in range(2):
            self._tx(self.new_order)
        self._tx(self.advance_order)
        if self.rng.random() < 0.5:
            self._tx(self.reprice)
        if self.rng.random() < 0.3:
            self._tx(self.cancel_order)
        if self.rng.random() < 0.2:
            self._tx(self.delete_order)
        if i % 10 == 9:
            self._tx(self.restock)
        if i == rounds // 3:
            self._tx(self.change_primary_keys)
        if i == rounds // 2:
            self.alter_table()  # DDL commits implicitly
        self._tx(self.reward)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3306)
    p.add_argument("--user", default="root")
    p.add_argument("--password", default="")
    p.add_argument("--database", default="shop")
    p.add_argument("--rounds", type=int, default=150, help="rounds of transactions (default 150)")
    p.add_argument("--rate", type=float, default=0.0, help="rounds per second; 0 = as fast as possible")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    try:
        conn = pymysql.connect(
            host=args.host,
            port=args.port,
            user=args.user,
            password=args.password,
            database=args.database,
            connect_timeout=10,
            autocommit=True,
        )
    except pymysql.MySQLError as e:
        print(f"loadgen: cannot connect to {args.host}:{args.port}/{args.database}: {e.args[-1]}", file=sys.stderr)
        return 1
    load = ShopLoad(conn, random.Random(args.seed))
    start = time.monotonic()
    with conn:
        for i in range(args.rounds):
            load.round(i, args.rounds)
            if args.rate > 0:
                time.sleep(max(0.0, start + (i + 1) / args.rate - time.monotonic()))
    summary = ", ".join(f"{v} {k.replace('_', ' ')}s" for k, v in load.counts.items())
    print(f"loadgen: {args.rounds} rounds in {time.monotonic() - start:.1f}s: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
