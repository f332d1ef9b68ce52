-- New-Order (clause 2.4.2) as one call. Items come as comma-separated lists in the client's
-- order (sorted by supplying warehouse and item, so concurrent New-Orders lock stock rows in one
-- order and do not deadlock). An unused item id (the 1% the specification rolls back) rolls the
-- whole transaction back and signals SQLSTATE 45000 with "tpcc: rollback", which the driver
-- counts as an intended rollback, not an error.
CREATE PROCEDURE tpcc_new_order(IN p_w_id INT, IN p_d_id INT, IN p_c_id INT, IN p_ol_cnt INT,
                                IN p_items VARCHAR(255), IN p_supply VARCHAR(255), IN p_qty VARCHAR(255),
                                IN p_all_local INT)
BEGIN
  DECLARE v_w_tax DECIMAL(4,4);
  DECLARE v_d_tax DECIMAL(4,4);
  DECLARE v_c_discount DECIMAL(4,4);
  DECLARE v_c_last VARCHAR(16);
  DECLARE v_c_credit CHAR(2);
  DECLARE v_o_id INT;
  DECLARE v_n INT DEFAULT 1;
  DECLARE v_i_id INT;
  DECLARE v_supply INT;
  DECLARE v_qty INT;
  DECLARE v_price DECIMAL(5,2);
  DECLARE v_name VARCHAR(24);
  DECLARE v_i_data VARCHAR(50);
  DECLARE v_s_qty INT;
  DECLARE v_s_data VARCHAR(50);
  DECLARE v_dist CHAR(24);
  DECLARE v_total DECIMAL(12,2) DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  SELECT c_discount, c_last, c_credit INTO v_c_discount, v_c_last, v_c_credit
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w_id;
  SELECT d_tax, d_next_o_id INTO v_d_tax, v_o_id FROM district
    WHERE d_w_id = p_w_id AND d_id = p_d_id FOR UPDATE;
  UPDATE district SET d_next_o_id = v_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES (v_o_id, p_d_id, p_w_id, p_c_id, NOW(), NULL, p_ol_cnt, p_all_local);
  INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
  WHILE v_n <= p_ol_cnt DO
    SET v_i_id = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_items, ',', v_n), ',', -1) AS UNSIGNED);
    SET v_supply = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_supply, ',', v_n), ',', -1) AS UNSIGNED);
    SET v_qty = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_qty, ',', v_n), ',', -1) AS UNSIGNED);
    SET v_price = NULL;
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_i_data FROM item WHERE i_id = v_i_id;
    IF v_price IS NULL THEN
      ROLLBACK;
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc: rollback (unused item)';
    END IF;
    SELECT s_quantity, s_data,
           CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
                       WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
                       WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
      INTO v_s_qty, v_s_data, v_dist
      FROM stock WHERE s_i_id = v_i_id AND s_w_id = v_supply FOR UPDATE;
    UPDATE stock SET s_quantity = IF(v_s_qty >= v_qty + 10, v_s_qty - v_qty, v_s_qty - v_qty + 91),
                     s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
                     s_remote_cnt = s_remote_cnt + IF(v_supply = p_w_id, 0, 1)
      WHERE s_i_id = v_i_id AND s_w_id = v_supply;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                            ol_quantity, ol_amount, ol_dist_info)
      VALUES (v_o_id, p_d_id, p_w_id, v_n, v_i_id, v_supply, NULL, v_qty, v_qty * v_price, v_dist);
    SET v_total = v_total + v_qty * v_price;
    SET v_n = v_n + 1;
  END WHILE;
  COMMIT;
END
