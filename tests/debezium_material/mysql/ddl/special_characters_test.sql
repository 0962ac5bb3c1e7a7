-- ----------------------------------------------------------------------------------------------------------------
-- DATABASE: special_"[`]$'_db
-- ----------------------------------------------------------------------------------------------------------------

CREATE TABLE `special"[``]$'`
(
    `special"[``$]'_id` INT AUTO_INCREMENT NOT NULL,
    `value`             INT                NOT NULL,
    PRIMARY KEY (`special"[``$]'_id`)
);

INSERT INTO `special"[``]$'`
VALUES (default, 123);
