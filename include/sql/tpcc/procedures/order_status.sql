-- Order-Status (clause 2.6.2), read-only: the customer by id or (p_c_id = 0) by last name, their
-- latest order and its lines. The lines are read into a variable, so nothing but the call's
-- status travels back.
CREATE PROCEDURE tpcc_order_status(IN p_w_id INT, IN p_d_id INT, IN p_c_id INT, IN p_c_last VARCHAR(16))
BEGIN
  DECLARE v_c_id INT;
  DECLARE v_count INT;
  DECLARE v_offset INT;
  DECLARE v_balance DECIMAL(12,2);
  DECLARE v_o_id INT;
  DECLARE v_carrier INT;
  DECLARE v_entry DATETIME;
  DECLARE v_lines TEXT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION READ ONLY;
  IF p_c_id = 0 THEN
    SELECT COUNT(*) INTO v_count FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
    SET v_offset = GREATEST(CEIL(v_count / 2) - 1, 0);
    SELECT c_id INTO v_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
      ORDER BY c_first LIMIT v_offset, 1;
  ELSE
    SET v_c_id = p_c_id;
  END IF;
  SELECT c_balance INTO v_balance FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
  SELECT o_id, o_carrier_id, o_entry_d INTO v_o_id, v_carrier, v_entry FROM orders
    WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id ORDER BY o_id DESC LIMIT 1;
  SELECT GROUP_CONCAT(CONCAT_WS(':', ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d))
    INTO v_lines FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
  COMMIT;
END
