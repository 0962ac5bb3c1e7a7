-- ----------------------------------------------------------------------------------------------------------------
-- DATABASE:  custom_snapshot
-- ----------------------------------------------------------------------------------------------------------------


CREATE TABLE a (pk INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, aa integer) AUTO_INCREMENT=1;
CREATE TABLE b (pk INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, aa integer) AUTO_INCREMENT=1;

INSERT INTO a (aa) VALUES (1);
INSERT INTO b (aa) VALUES (1);
