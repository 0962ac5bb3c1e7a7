-- ----------------------------------------------------------------------------------------------------------------
-- DATABASE:  multitable_statement
-- ----------------------------------------------------------------------------------------------------------------

CREATE TABLE t1 (ID INT PRIMARY KEY);
CREATE TABLE t2 (ID INT PRIMARY KEY);
CREATE TABLE t3 (ID INT PRIMARY KEY);
CREATE TABLE t4 (ID INT PRIMARY KEY);

DROP TABLE t1,t2,t3,t4;