-- Payment (clause 2.5.2) as one call: the customer by id, or (p_c_id = 0) by last name, taking
-- the one in the middle of those ordered by first name; bad-credit customers get the payment
-- prepended to c_data (kept to 500 characters).
CREATE PROCEDURE tpcc_payment(IN p_w_id INT, IN p_d_id INT, IN p_c_w_id INT, IN p_c_d_id INT,
                              IN p_c_id INT, IN p_c_last VARCHAR(16), IN p_amount DECIMAL(6,2))
BEGIN
  DECLARE v_w_name VARCHAR(10);
  DECLARE v_d_name VARCHAR(10);
  DECLARE v_c_id INT;
  DECLARE v_count INT;
  DECLARE v_offset INT;
  DECLARE v_credit CHAR(2);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w_id;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  IF p_c_id = 0 THEN
    SELECT COUNT(*) INTO v_count FROM customer
      WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last;
    SET v_offset = GREATEST(CEIL(v_count / 2) - 1, 0);
    SELECT c_id INTO v_c_id FROM customer
      WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last
      ORDER BY c_first LIMIT v_offset, 1;
  ELSE
    SET v_c_id = p_c_id;
  END IF;
  SELECT c_credit INTO v_credit FROM customer
    WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1,
                        c_data = LEFT(CONCAT_WS(' ', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, p_amount, c_data), 500)
      WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1
      WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, NOW(), p_amount, CONCAT(v_w_name, '    ', v_d_name));
  COMMIT;
END
