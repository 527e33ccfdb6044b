// Operators of the paper's unit-cost table (Appendix "Energy Model and Unit Costs"), one module each.
//
// Every operator registers its inputs (`<port>_r`) and its result, so one operation happens per
// clock and the power OpenSTA reports, times the clock period, is the energy of one operation
// including its share of register and clock-pin power. No reset: the registers start at zero (the
// `initial` blocks, outside synthesis), which is also how the activity model in operators.py starts
// them.
//
// Widths are parameters; synth_scripts/operators.py sets them and says why.

// ACC: accumulate a B-bit operand into a W-bit two's complement accumulator (E_ACC1/2/4).
// B = 1 is a 1-bit weight: bit 1 means +1 and bit 0 means -1 (rate-coded linear layers).
module mh_acc #(parameter B = 4, parameter W = 18) (
    input  wire         clk,
    input  wire [B-1:0] x,
    output reg  [W-1:0] acc
);
    reg [B-1:0] x_r;
    wire [W-1:0] addend;
    generate
        if (B == 1) begin : g_pm1
            assign addend = x_r[0] ? {{(W-1){1'b0}}, 1'b1} : {W{1'b1}};
        end else begin : g_signed
            assign addend = {{(W-B){x_r[B-1]}}, x_r};
        end
    endgenerate
`ifndef SYNTHESIS
    initial begin
        x_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        x_r <= x;
        acc <= acc + addend;
    end
endmodule

// INT4 MAC with a 1-bit weight (E_MAC4): acc += w ? a : -a, a a signed A-bit code.
module mh_mac1 #(parameter A = 4, parameter W = 18) (
    input  wire         clk,
    input  wire         w,
    input  wire [A-1:0] a,
    output reg  [W-1:0] acc
);
    reg w_r;
    reg [A-1:0] a_r;
    wire [W-1:0] a_ext = {{(W-A){a_r[A-1]}}, a_r};
`ifndef SYNTHESIS
    initial begin
        w_r = 0;
        a_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        w_r <= w;
        a_r <= a;
        acc <= w_r ? acc + a_ext : acc - a_ext;
    end
endmodule

// Signed A-bit x signed B-bit MAC (E_MAC4x4, the QNN attention path): acc += a * b.
module mh_mac #(parameter A = 4, parameter B = 4, parameter W = 16) (
    input  wire         clk,
    input  wire [A-1:0] a,
    input  wire [B-1:0] b,
    output reg  [W-1:0] acc
);
    reg signed [A-1:0] a_r;
    reg signed [B-1:0] b_r;
    wire signed [A+B-1:0] p = a_r * b_r;
`ifndef SYNTHESIS
    initial begin
        a_r = 0;
        b_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        a_r <= a;
        b_r <= b;
        acc <= acc + {{(W-A-B){p[A+B-1]}}, p};
    end
endmodule

// Threshold comparison (E_CMP): fire = v >= theta, both signed W-bit.
module mh_cmp #(parameter W = 18) (
    input  wire         clk,
    input  wire [W-1:0] v,
    input  wire [W-1:0] theta,
    output reg          fire
);
    reg signed [W-1:0] v_r;
    reg signed [W-1:0] theta_r;
`ifndef SYNTHESIS
    initial begin
        v_r = 0;
        theta_r = 0;
        fire = 0;
    end
`endif
    always @(posedge clk) begin
        v_r <= v;
        theta_r <= theta;
        fire <= v_r >= theta_r;
    end
endmodule

// Membrane subtraction (E_SUB): y = v - theta, signed W-bit, wrapping.
module mh_sub #(parameter W = 18) (
    input  wire         clk,
    input  wire [W-1:0] v,
    input  wire [W-1:0] theta,
    output reg  [W-1:0] y
);
    reg [W-1:0] v_r;
    reg [W-1:0] theta_r;
`ifndef SYNTHESIS
    initial begin
        v_r = 0;
        theta_r = 0;
        y = 0;
    end
`endif
    always @(posedge clk) begin
        v_r <= v;
        theta_r <= theta;
        y <= v_r - theta_r;
    end
endmodule

// INT4 clamp (E_clamp4): y = clip(x, -2**(N-1), 2**(N-1)-1) of a signed W-bit level.
module mh_clamp #(parameter W = 18, parameter N = 4) (
    input  wire         clk,
    input  wire [W-1:0] x,
    output reg  [N-1:0] y
);
    reg signed [W-1:0] x_r;
    localparam signed [W-1:0] HI = (1 << (N - 1)) - 1;
    localparam signed [W-1:0] LO = -(1 << (N - 1));
`ifndef SYNTHESIS
    initial begin
        x_r = 0;
        y = 0;
    end
`endif
    always @(posedge clk) begin
        x_r <= x;
        if (x_r > HI)
            y <= HI[N-1:0];
        else if (x_r < LO)
            y <= LO[N-1:0];
        else
            y <= x_r[N-1:0];
    end
endmodule

// M-TTFS encoder (E_enc): code q (N bits, two's complement when C < 2**N - 1) to event time
// tau = C - q and valid = |tau - IMAX| > K (the temporal mask with dead zone Omega_K).
module mh_enc #(parameter N = 4, parameter C = 7, parameter IMAX = 7, parameter K = 1) (
    input  wire         clk,
    input  wire [N-1:0] q,
    output reg  [N-1:0] tau,
    output reg          valid
);
    reg [N-1:0] q_r;
    wire [N-1:0] t = C[N-1:0] - q_r;
    // |t - IMAX| > K, unrolled into two unsigned comparisons on N+1 bits
    wire above = {1'b0, t} > IMAX + K;
    wire below = {1'b0, t} + K < IMAX;
`ifndef SYNTHESIS
    initial begin
        q_r = 0;
        tau = 0;
        valid = 0;
    end
`endif
    always @(posedge clk) begin
        q_r <= q;
        tau <= t;
        valid <= above | below;
    end
endmodule
