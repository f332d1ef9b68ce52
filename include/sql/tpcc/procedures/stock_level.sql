-- Stock-Level (clause 2.8.2), read-only: how many distinct items of the district's last 20
-- orders have fewer than p_threshold in stock at the warehouse.
CREATE PROCEDURE tpcc_stock_level(IN p_w_id INT, IN p_d_id INT, IN p_threshold INT)
BEGIN
  DECLARE v_next INT;
  DECLARE v_low INT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION READ ONLY;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT COUNT(DISTINCT s.s_i_id) INTO v_low
    FROM order_line AS l JOIN stock AS s ON s.s_w_id = l.ol_w_id AND s.s_i_id = l.ol_i_id
    WHERE l.ol_w_id = p_w_id AND l.ol_d_id = p_d_id AND l.ol_o_id >= v_next - 20 AND l.ol_o_id < v_next
      AND s.s_quantity < p_threshold;
  COMMIT;
END
