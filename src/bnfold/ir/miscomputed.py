"""The probes of ir/runtimes.py that a runtime loads and runs computing something else than the model
says (values or shapes): derived by schemas/derive_runtimes.py with the table (do not edit). A graph
holding one runs right there only by luck, so a target for that runtime leaves it as it is
(engine/targets.py: Target.left_as_is)."""

OTHERWISE = {
    "litert": frozenset(
        {
            ("ADD", "TANH"),
            ("SUB", "TANH"),
            ("MUL", "TANH"),
            ("DIV", "TANH"),
            ("CONV_2D", "TANH"),
            ("DEPTHWISE_CONV_2D", "TANH"),
            ("MAX_POOL_2D", "TANH"),
            ("AVERAGE_POOL_2D", "TANH"),
            ("ADD", "form reads_float16_dequantize_output"),
            ("MUL", "form reads_float16_dequantize_output"),
            ("FULLY_CONNECTED", "form reads_float16_dequantize_output"),
            ("CONV_2D", "form reads_float16_dequantize_output"),
            ("RELU", "form reads_float16_dequantize_output"),
            ("LOGISTIC", "form reads_float16_dequantize_output"),
            ("TANH", "form reads_float16_dequantize_output"),
            ("RESHAPE", "form reads_float16_dequantize_output"),
            ("TRANSPOSE", "form reads_float16_dequantize_output"),
            ("MEAN", "form reads_float16_dequantize_output"),
            ("PAD", "form reads_float16_dequantize_output"),
            ("CONCATENATION", "form reads_float16_dequantize_output"),
            ("STRIDED_SLICE", "form reads_float16_dequantize_output"),
            ("SLICE", "form reads_float16_dequantize_output"),
            ("ABS", "form reads_float16_dequantize_output"),
            ("NEG", "form reads_float16_dequantize_output"),
        }
    ),
    "onert": frozenset(
        {
            ("CONCATENATION", "RELU"),
            ("CONCATENATION", "RELU_N1_TO_1"),
            ("CONCATENATION", "RELU6"),
            ("CONCATENATION", "TANH"),
            ("FULLY_CONNECTED", "form keep_num_dims"),
            ("SPLIT_V", "NONE"),
            ("ROPE", "form tables_of_several_rows"),
            ("MINIMUM", "rank 5"),
            ("MINIMUM", "rank 6"),
            ("MAXIMUM", "rank 5"),
            ("MAXIMUM", "rank 6"),
            ("ADD", "form reads_graph_output"),
            ("MUL", "form reads_graph_output"),
            ("FULLY_CONNECTED", "form reads_graph_output"),
            ("CONV_2D", "form reads_graph_output"),
            ("RELU", "form reads_graph_output"),
            ("LOGISTIC", "form reads_graph_output"),
            ("TANH", "form reads_graph_output"),
            ("RESHAPE", "form reads_graph_output"),
            ("TRANSPOSE", "form reads_graph_output"),
            ("MEAN", "form reads_graph_output"),
            ("PAD", "form reads_graph_output"),
            ("CONCATENATION", "form reads_graph_output"),
            ("SQUEEZE", "form reads_graph_output"),
            ("STRIDED_SLICE", "form reads_graph_output"),
            ("SLICE", "form reads_graph_output"),
            ("ABS", "form reads_graph_output"),
            ("NEG", "form reads_graph_output"),
        }
    ),
}
