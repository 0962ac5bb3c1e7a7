CREATE TABLE `name-adjustment` (id INT);
INSERT INTO `name-adjustment` (id) VALUES (1);
