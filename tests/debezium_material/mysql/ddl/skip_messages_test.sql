CREATE TABLE `debezium_test` (
  id INT NOT NULL PRIMARY KEY,
  black INT,
  white INT
) ENGINE=InnoDB AUTO_INCREMENT=15851 DEFAULT CHARSET=utf8;
INSERT INTO `debezium_test`(id, black, white) VALUES (0,0,0);
