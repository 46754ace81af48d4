"""crawler/spiders"""
