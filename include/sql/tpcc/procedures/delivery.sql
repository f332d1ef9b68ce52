-- Delivery (clause 2.7.4) for all ten districts of a warehouse in one transaction: the oldest
-- undelivered order of each district is delivered by the carrier; a district without one is
-- skipped.
CREATE PROCEDURE tpcc_delivery(IN p_w_id INT, IN p_carrier_id INT)
BEGIN
  DECLARE v_d_id INT DEFAULT 1;
  DECLARE v_o_id INT;
  DECLARE v_c_id INT;
  DECLARE v_amount DECIMAL(12,2);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  WHILE v_d_id <= 10 DO
    SET v_o_id = NULL;
    SELECT no_o_id INTO v_o_id FROM new_orders WHERE no_w_id = p_w_id AND no_d_id = v_d_id
      ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o_id IS NOT NULL THEN
      DELETE FROM new_orders WHERE no_w_id = p_w_id AND no_d_id = v_d_id AND no_o_id = v_o_id;
      SELECT o_c_id INTO v_c_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id;
      UPDATE orders SET o_carrier_id = p_carrier_id WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id;
      UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id;
      SELECT SUM(ol_amount) INTO v_amount FROM order_line
        WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id;
      UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w_id AND c_d_id = v_d_id AND c_id = v_c_id;
    END IF;
    SET v_d_id = v_d_id + 1;
  END WHILE;
  COMMIT;
END
