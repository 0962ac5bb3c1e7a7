-- The demo's sample shop: four tables with the column types a lake usually meets
-- (auto-increment and natural keys, a composite key, DECIMAL money, ENUM, JSON, dates,
-- times with fractions, a boolean flag, nullable text). Runs on MariaDB 10.6+ and MySQL 8
-- inside the current database (the demo creates `shop`; docker/mysql/init-shop.sh does too).

CREATE TABLE customers (
  id         INT AUTO_INCREMENT PRIMARY KEY,
  email      VARCHAR(120) NOT NULL UNIQUE,
  name       VARCHAR(80)  NOT NULL,
  tier       ENUM('bronze', 'silver', 'gold') NOT NULL DEFAULT 'bronze',
  active     TINYINT(1) NOT NULL DEFAULT 1,
  created_at DATETIME(3) NOT NULL
);

CREATE TABLE products (
  sku        VARCHAR(24) PRIMARY KEY,
  title      VARCHAR(200) NOT NULL,
  price      DECIMAL(10, 2) NOT NULL,
  stock      INT NOT NULL,
  attrs      JSON NULL,
  weight_kg  DOUBLE NULL DEFAULT 1.0  -- NULL rows must stay NULL downstream, not become 1.0
);

CREATE TABLE orders (
  id          BIGINT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  status      ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL DEFAULT 'new',
  total       DECIMAL(12, 2) NOT NULL DEFAULT 0,
  ordered_on  DATE NOT NULL,
  note        TEXT NULL
);

CREATE TABLE order_lines (
  order_id   BIGINT NOT NULL,
  line_no    SMALLINT NOT NULL,
  sku        VARCHAR(24) NOT NULL,
  qty        INT NOT NULL,
  unit_price DECIMAL(10, 2) NOT NULL,
  PRIMARY KEY (order_id, line_no)
);

INSERT INTO customers (email, name, tier, active, created_at) VALUES
  ('ada@example.com',    'Ada Lovelace',     'gold',   1, '2024-01-05 09:30:00.125'),
  ('alan@example.com',   'Alan Turing',      'silver', 1, '2024-02-11 14:02:10.000'),
  ('grace@example.com',  'Grace Hopper',     'gold',   1, '2024-03-17 08:45:59.999'),
  ('edsger@example.com', 'Edsger Dijkstra',  'bronze', 0, '2024-04-01 00:00:00.000'),
  ('barbara@example.com','Barbara Liskov',   'silver', 1, '2024-05-23 19:20:00.500');

INSERT INTO products (sku, title, price, stock, attrs, weight_kg) VALUES
  ('KB-001',  'Mechanical keyboard', 89.90, 40, '{"layout": "ISO", "switch": "brown"}', 1.1),
  ('MS-002',  'Wireless mouse',      24.50, 120, '{"dpi": 1600}', 0.09),
  ('MN-003',  '27" monitor',         239.00, 15, NULL, 5.4),
  ('CB-004',  'USB-C cable',         9.99, 500, '{"length_m": 1}', NULL),
  ('HD-005',  'Headset',             59.00, 30, NULL, 0.3);

INSERT INTO orders (customer_id, status, total, ordered_on, note) VALUES
  (1, 'paid',    114.40, '2024-06-01', NULL),
  (2, 'shipped', 239.00, '2024-06-02', 'leave at the door'),
  (3, 'new',     19.98,  '2024-06-03', NULL);

INSERT INTO order_lines (order_id, line_no, sku, qty, unit_price) VALUES
  (1, 1, 'KB-001', 1, 89.90),
  (1, 2, 'MS-002', 1, 24.50),
  (2, 1, 'MN-003', 1, 239.00),
  (3, 1, 'CB-004', 2, 9.99);
