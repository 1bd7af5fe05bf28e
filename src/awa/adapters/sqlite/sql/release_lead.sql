-- Purpose: give up a leadership this owner holds. Parameters: name, owner.
DELETE FROM awa_leader WHERE name = :name AND owner = :owner
