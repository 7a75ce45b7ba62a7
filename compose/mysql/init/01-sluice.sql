-- Run once by the MySQL image on an empty data directory (docker-entrypoint-initdb.d).

-- The user sluice connects as, with the grants `sluice check` asks for and nothing that
-- writes: SELECT (snapshots, table definitions), RELOAD, REPLICATION SLAVE (read the binlog)
-- and REPLICATION CLIENT (binlog and GTID status). Change the password together with
-- source.url in sluice.toml (or SLUICE_SOURCE_URL).
CREATE USER IF NOT EXISTS 'sluice'@'%' IDENTIFIED BY 'sluice';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice'@'%';

-- A small demo database; the demo-writer service keeps changing it.
CREATE DATABASE IF NOT EXISTS demo;
USE demo;

CREATE TABLE customers (
  id INT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  email VARCHAR(200),
  balance DECIMAL(10,2) NOT NULL DEFAULT 0,
  updated DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
);

CREATE TABLE orders (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  status ENUM('new', 'paid', 'shipped') NOT NULL DEFAULT 'new',
  created TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
);

INSERT INTO customers (id, name, email, balance) VALUES
  (1, 'Ann', 'ann@example.com', 100.00),
  (2, 'Bob', 'bob@example.com', 50.00),
  (3, 'Cleo', NULL, 0.00);

INSERT INTO orders (customer_id, amount, status) VALUES
  (1, 12.50, 'paid'),
  (2, 7.25, 'new');
