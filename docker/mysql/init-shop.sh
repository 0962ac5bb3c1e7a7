#!/bin/bash
# The mysql image runs this once, when the data volume is empty (docker-entrypoint-initdb.d),
# against its temporary socket-only server. It creates the demo's users and loads the shop
# schema written for the embedded demo (examples/demo/shop.sql, mounted at /opt/demo).
#   cdc   Debezium's grants for a binlog reader (SELECT, RELOAD, SHOW DATABASES,
#         REPLICATION SLAVE, REPLICATION CLIENT), as plugins/mysql/README.md lists them.
#   shop  owns the shop schema; the load generator logs in as this user.
set -eo pipefail

root() { MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mysql --protocol=socket -uroot "$@"; }

root <<SQL
CREATE DATABASE IF NOT EXISTS shop;
CREATE USER IF NOT EXISTS 'cdc'@'%' IDENTIFIED BY '${CDC_PASSWORD}';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%';
CREATE USER IF NOT EXISTS 'shop'@'%' IDENTIFIED BY '${SHOP_PASSWORD}';
GRANT ALL PRIVILEGES ON shop.* TO 'shop'@'%';
SQL

root --database=shop < /opt/demo/shop.sql
echo "init-shop: users cdc and shop created, shop schema loaded"
